import pg from 'pg';
import { runner } from 'node-pg-migrate';
import { MIGRATIONS_DIR } from '../paths.js';
import { CONNECT_TIMEOUT_MS } from './database.js';

export interface MigrationLog {
  info(message: string): void;
}

/**
 * The connection is ours: node-pg-migrate ends its own without waiting, and a command that then stopped the
 * embedded server met an unhandled 'error' event on it.
 */
export async function migrate(databaseUrl: string, log?: MigrationLog): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  client.on('error', () => {}); // a lost connection fails the runner's next statement, which reports it
  try {
    await client.connect();
    const applied = await runner({
      dbClient: client,
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
  } finally {
    await client.end().catch(() => undefined);
  }
}
