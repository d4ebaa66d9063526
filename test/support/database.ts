import { readdirSync } from 'node:fs';
import { MIGRATIONS_DIR } from '../../src/paths.js';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { migrate } from '../../src/store/migrate.js';

/** The server `make test` started (or TEST_DATABASE_URL named); every test file gets its own database on it. */
export function testServerUrl(): string {
  if (process.env.SITEKEY_TEST_LANE === 'unit') {
    throw new Error('this test needs PostgreSQL, which make test-unit does not start: it belongs in test/integration/');
  }
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set: run tests with `make test`, or point it at a PostgreSQL server');
  return url;
}

export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  drop(): Promise<void>;
}

/** How long drop() lets the test's closed connections leave before it forces the rest off. */
const CONNECTIONS_LEAVE_WITHIN_MS = 5_000;

/**
 * Waits until no session is left on the database, or CONNECTIONS_LEAVE_WITHIN_MS. pg-pool's end()
 * resolves before its connections have closed: forced off by DROP … WITH (FORCE), one of them raises
 * "terminating connection due to administrator command" in the test's process after its tests ended.
 */
async function connectionsGone(client: pg.Client, database: string): Promise<void> {
  for (const deadline = Date.now() + CONNECTIONS_LEAVE_WITHIN_MS; Date.now() < deadline; await sleep(20)) {
    const { rows } = await client.query<{ sessions: number }>('SELECT count(*)::int AS sessions FROM pg_stat_activity WHERE datname = $1', [database]);
    if (rows[0]?.sessions === 0) return;
  }
}

/** A new, migrated database on the test server. */
export async function freshDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const serverUrl = testServerUrl();
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = databaseUrl(serverUrl, name);
  if (options.migrated ?? true) await migrate(url);
  return {
    url,
    name,
    async drop() {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      try {
        await connectionsGone(client, name);
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** The migrations the service ships, by name, in the order they apply: read from the folder, so no test lists them. */
export function shippedMigrations(): string[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((file) => file.endsWith('.sql'))
    .map((file) => file.slice(0, -'.sql'.length))
    .sort();
}
