import { readdirSync } from 'node:fs';
import { MIGRATIONS_DIR } from '../../src/paths.js';
import { randomBytes } from 'node:crypto';
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
