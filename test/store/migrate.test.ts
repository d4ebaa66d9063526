import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { migrate } from '../../src/store/migrate.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

describe('migrate', () => {
  let database: TestDatabase;
  before(async () => {
    database = await freshDatabase({ migrated: false });
  });
  after(async () => {
    await database?.drop();
  });

  it('lets replicas and CLI commands that migrate at once wait for each other, applying each migration once', async () => {
    const runs = await Promise.allSettled(Array.from({ length: 4 }, () => migrate(database.url)));
    const failures = runs.flatMap((run) => (run.status === 'rejected' ? [String(run.reason)] : []));
    assert.deepEqual(failures, []);
    const applied = runs.flatMap((run) => (run.status === 'fulfilled' ? run.value : []));
    assert.deepEqual(applied.sort(), ['001_initial-schema', '002_notify-credential-changes', '003_apikey-sunset', '006_denial-overflow-addresses']);
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    try {
      const { rows } = await sql.query('SELECT name FROM schema_migrations ORDER BY id');
      assert.deepEqual(rows.map((row) => row.name), ['001_initial-schema', '002_notify-credential-changes', '003_apikey-sunset', '006_denial-overflow-addresses']);
    } finally {
      await sql.end();
    }
  });
});
