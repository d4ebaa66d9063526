import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createLogger } from '../../../src/observe/logger.js';
import { AuthUsageRecorder } from '../../../src/store/auth-usage-recorder.js';
import { insertSite } from '../../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

const DAY_MS = 86_400_000;

describe('authentication usage recorder', () => {
  let database: TestDatabase;
  let pool: pg.Pool;

  const hours = async () => {
    const { rows } = await pool.query<{ site_id: string; method: string; count: string; days_ago: number }>(
      `SELECT site_id::text, method, count::text, floor(extract(epoch FROM now() - hour) / 86400)::int AS days_ago FROM auth_usage ORDER BY hour`,
    );
    return rows.map((row) => `${row.site_id} ${row.method} ${row.count} ${row.days_ago}d`);
  };

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url });
    await insertSite(pool, { id: '1001' });
  });

  after(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('deletes the hours past AUTH_USAGE_RETENTION_DAYS as it writes, and never writes one back', async () => {
    await pool.query(
      `INSERT INTO auth_usage (hour, site_id, method, count, last_seen) VALUES
         (date_trunc('hour', now() - interval '41 days'), 1001, 'api_key', 7, now() - interval '41 days'),
         (date_trunc('hour', now() - interval '39 days'), 1001, 'token', 5, now() - interval '39 days')`,
    );
    const recorder = new AuthUsageRecorder({ pool, flushSeconds: 3_600, retentionDays: 40, maxGroups: 100, logger: createLogger('silent') });
    const now = Date.now();
    recorder.record('1001', 'token', now);
    recorder.record('1001', 'token', now);
    // A group held across a database outage longer than the retention: dropped, not added again.
    recorder.record('1001', 'api_key', now - 45 * DAY_MS);
    await recorder.flush();
    assert.deepEqual(await hours(), ['1001 token 5 39d', '1001 token 2 0d']);
    await recorder.stop();
  });
});
