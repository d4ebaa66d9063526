import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createLogger } from '../../../src/observe/logger.js';
import { AuthUsageRecorder } from '../../../src/store/auth-usage-recorder.js';
import { insertSite } from '../../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

describe('authentication usage recorder', () => {
  let database: TestDatabase;
  let pool: pg.Pool;

  /** Each row as "<days before `now`, whole> <method> <count>": epoch arithmetic, the same in every time zone. */
  const rows = async (now: number) => {
    const { rows: held } = await pool.query<{ hour: string; method: string; count: string }>(
      'SELECT (extract(epoch FROM hour) * 1000)::bigint::text AS hour, method, count::text FROM auth_usage ORDER BY hour',
    );
    return held.map((row) => `${Math.floor((now - Number(row.hour)) / DAY_MS)}d ${row.method} ${row.count}`);
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

  it('deletes the hours past AUTH_USAGE_RETENTION_DAYS as it writes, oldest first and a bounded number a flush, and never writes one back', async () => {
    const now = Date.now();
    const hourOf = (daysAgo: number) => Math.floor((now - daysAgo * DAY_MS) / HOUR_MS) * HOUR_MS;
    for (const [daysAgo, method, count] of [[43, 'api_key', 3], [42, 'api_key', 4], [41, 'api_key', 7], [39, 'token', 5]] as const) {
      await pool.query(`INSERT INTO auth_usage (hour, site_id, method, count, last_seen) VALUES (to_timestamp($1 / 1000.0), 1001, $2, $3, to_timestamp($1 / 1000.0))`, [
        hourOf(daysAgo),
        method,
        count,
      ]);
    }
    const recorder = new AuthUsageRecorder({ pool, flushSeconds: 3_600, retentionDays: 40, expiredRowsPerFlush: 2, maxGroups: 100, logger: createLogger('silent') });
    recorder.record('1001', 'token', now);
    recorder.record('1001', 'token', now);
    // A group held across a database outage longer than the retention: dropped, not added again.
    recorder.record('1001', 'api_key', now - 45 * DAY_MS);
    await recorder.flush();
    assert.deepEqual(await rows(now), ['41d api_key 7', '39d token 5', '0d token 2']);
    recorder.record('1001', 'token', now);
    await recorder.flush();
    assert.deepEqual(await rows(now), ['39d token 5', '0d token 3']);
    await recorder.stop();
  });

  it('deletes the hours past retention on a flush with nothing to write, at most once an hour', async () => {
    const now = Date.now();
    await pool.query('DELETE FROM auth_usage');
    for (const daysAgo of [42, 41, 39]) {
      await pool.query(`INSERT INTO auth_usage (hour, site_id, method, count, last_seen) VALUES (date_trunc('hour', now()) - make_interval(days => $1), 1001, 'api_key', 1, now())`, [daysAgo]);
    }
    // A replica that has allowed nothing since it started: its flushes have no counts to write.
    const recorder = new AuthUsageRecorder({ pool, flushSeconds: 3_600, retentionDays: 40, expiredRowsPerFlush: 1, maxGroups: 100, logger: createLogger('silent') });
    await recorder.flush();
    assert.deepEqual(await rows(now), ['41d api_key 1', '39d api_key 1']);
    // The next idle flush within the hour leaves the rest to the next hour, or to the next flush that writes.
    await recorder.flush();
    assert.deepEqual(await rows(now), ['41d api_key 1', '39d api_key 1']);
    recorder.record('1001', 'token', now);
    await recorder.stop();
    assert.deepEqual(await rows(now), ['39d api_key 1', '0d token 1']);
  });
});
