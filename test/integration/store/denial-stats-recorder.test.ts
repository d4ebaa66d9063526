import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createLogger } from '../../../src/observe/logger.js';
import { DenialStatsRecorder, OVERFLOW_ADDRESS } from '../../../src/store/denial-stats-recorder.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

/** Issue #11: refusal counts are bounded in memory whoever sends them, and written in one statement per flush. */
describe('denial stats recorder', () => {
  let database: TestDatabase;
  let pool: pg.Pool;

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  after(async () => {
    await pool?.end();
    await database?.drop();
  });

  const rows = async () =>
    (
      await pool.query<{ site_id: string; error_id: number; client_ip: string; count: string }>(
        'SELECT site_id::text, error_id, client_ip, sum(count)::text AS count FROM denial_stats GROUP BY 1, 2, 3 ORDER BY 4 DESC, 3',
      )
    ).rows.map((row) => [row.site_id, row.error_id, row.client_ip, Number(row.count)]);

  it('holds at most its cap of groups under a storm of distinct addresses, and counts the rest as "other"', async () => {
    let statements = 0;
    const counting = { query: (text: string, values: unknown[]) => (statements++, pool.query(text, values)) };
    const recorder = new DenialStatsRecorder({ pool: counting, flushSeconds: 3_600, retentionDays: 30, maxGroups: 100, logger: createLogger('silent') });
    const now = Date.now();
    for (let i = 0; i < 20_000; i++) recorder.record('1001', 103, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, false, now);
    assert.ok(recorder.size <= 101, `${recorder.size} groups held`);
    await recorder.stop();
    assert.equal(statements, 1, 'one statement per flush');
    const written = await rows();
    assert.deepEqual(written[0], ['1001', 103, OVERFLOW_ADDRESS, 19_900]);
    assert.equal(written.length, 101);
    assert.equal(written.reduce((sum, row) => sum + (row[3] as number), 0), 20_000, 'no refusal is lost');
  });

  it('adds to the same hour across flushes, keeps counts when the database fails, and drops hours past retention', async () => {
    await pool.query('DELETE FROM denial_stats');
    await pool.query(
      `INSERT INTO denial_stats VALUES (date_trunc('hour', now() - interval '40 days'), 1001, 102, '203.0.113.1', false, 7, now() - interval '40 days', now() - interval '40 days')`,
    );
    let failNext = true;
    const flaky = { query: (text: string, values: unknown[]) => (failNext ? ((failNext = false), Promise.reject(new Error('down'))) : pool.query(text, values)) };
    const recorder = new DenialStatsRecorder({ pool: flaky, flushSeconds: 3_600, retentionDays: 30, maxGroups: 100, logger: createLogger('silent') });
    recorder.record('1002', 102, '203.0.113.9', false, Date.now());
    await recorder.flush();
    recorder.record('1002', 102, '203.0.113.9', false, Date.now());
    await recorder.flush();
    recorder.record('1002', 102, '203.0.113.9', false, Date.now());
    await recorder.stop();
    assert.deepEqual(await rows(), [['1002', 102, '203.0.113.9', 3]]);
  });
});
