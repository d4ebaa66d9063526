import { runner } from 'node-pg-migrate';
import { MIGRATIONS_DIR } from '../paths.js';
import { CONNECT_TIMEOUT_MS } from './database.js';

export interface MigrationLog {
  info(message: string): void;
}

/** Applies every pending migration in src/store/migrations; returns the names it applied. */
export async function migrate(databaseUrl: string, log?: MigrationLog): Promise<string[]> {
  const applied = await runner({
    databaseUrl: { connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS },
    dir: MIGRATIONS_DIR,
    direction: 'up',
    migrationsTable: 'schema_migrations',
    // Several replicas, or CLI commands on the embedded database, may migrate at once: the advisory
    // lock serialises them. node-pg-migrate's default is to fail at once when another holds it.
    noLock: false,
    advisoryLockMode: 'wait',
    checkOrder: true,
    verbose: false,
    log: (message: string) => log?.info(message),
  });
  return applied.map((migration) => migration.name);
}
