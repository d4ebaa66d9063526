import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createLogger } from '../../../src/observe/logger.js';
import { DenialStatsRecorder, OVERFLOW_ADDRESS } from '../../../src/store/denial-stats-recorder.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { runCli } from '../../support/service.js';

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

  it('deletes a bounded number of expired rows a flush, oldest first, and does not write back a group held past retention', async () => {
    await pool.query('DELETE FROM denial_stats');
    const now = Date.now();
    const hourOf = (daysAgo: number) => Math.floor((now - daysAgo * 86_400_000) / 3_600_000) * 3_600_000;
    for (const [daysAgo, address] of [[33, '203.0.113.33'], [32, '203.0.113.32'], [31, '203.0.113.31'], [29, '203.0.113.29']] as const) {
      await pool.query(
        `INSERT INTO denial_stats (hour, site_id, error_id, client_ip, rehearsal, count, first_seen, last_seen)
         VALUES (to_timestamp($1 / 1000.0), 1001, 102, $2, false, 1, to_timestamp($1 / 1000.0), to_timestamp($1 / 1000.0))`,
        [hourOf(daysAgo), address],
      );
    }
    const recorder = new DenialStatsRecorder({ pool, flushSeconds: 3_600, retentionDays: 30, expiredRowsPerFlush: 2, maxGroups: 100, logger: createLogger('silent') });
    recorder.record('1002', 102, '203.0.113.9', false, now);
    recorder.record('1002', 102, '203.0.113.45', false, now - 45 * 86_400_000);
    await recorder.flush();
    const addresses = async () => (await rows()).map(([, , address]) => address).sort();
    assert.deepEqual(await addresses(), ['203.0.113.29', '203.0.113.31', '203.0.113.9']);
    recorder.record('1002', 102, '203.0.113.9', false, now);
    await recorder.stop();
    assert.deepEqual(await addresses(), ['203.0.113.29', '203.0.113.9']);
  });

  it('deletes expired rows on a flush with nothing to write, a replica that refuses nobody for a while included', async () => {
    await pool.query('DELETE FROM denial_stats');
    for (const [daysAgo, address] of [[31, '203.0.113.31'], [29, '203.0.113.29']] as const) {
      await pool.query(
        `INSERT INTO denial_stats (hour, site_id, error_id, client_ip, rehearsal, count, first_seen, last_seen)
         VALUES (date_trunc('hour', now()) - make_interval(days => $1), 1001, 102, $2, false, 1, now(), now())`,
        [daysAgo, address],
      );
    }
    const recorder = new DenialStatsRecorder({ pool, flushSeconds: 3_600, retentionDays: 30, maxGroups: 100, logger: createLogger('silent') });
    await recorder.stop();
    assert.deepEqual((await rows()).map(([, , address]) => address), ['203.0.113.29']);
  });

  it('keeps at most its cap of address rows per site and hour across flushes, and counts the rest, addresses too, in the overflow row', async () => {
    await pool.query('DELETE FROM denial_stats');
    const recorder = new DenialStatsRecorder({ pool, flushSeconds: 3_600, retentionDays: 30, maxGroups: 10_000, maxRowsPerSiteHour: 50, logger: createLogger('silent') });
    const address = (i: number) => `10.9.${(i >> 8) & 255}.${i & 255}`;
    const now = Date.now();
    // One client with many source addresses: 300 in one flush, 200 new ones and a known one again in the next.
    for (let i = 0; i < 300; i++) recorder.record('1001', 103, address(i), false, now);
    for (let i = 0; i < 5; i++) recorder.record('1001', 103, address(7), false, now);
    recorder.record('1002', 103, address(1), false, now);
    await recorder.flush();
    for (let i = 300; i < 500; i++) recorder.record('1001', 103, address(i), false, now);
    for (let i = 0; i < 10; i++) recorder.record('1001', 103, address(7), false, now);
    await recorder.stop();
    const { rows: perSite } = await pool.query<{ site_id: string; addressed: string; overflow_count: string; overflow_addresses: string; total: string }>(
      `SELECT site_id::text, count(*) FILTER (WHERE client_ip <> $1)::text AS addressed,
              coalesce(sum(count) FILTER (WHERE client_ip = $1), 0)::text AS overflow_count,
              sum(overflow_addresses)::text AS overflow_addresses, sum(count)::text AS total
         FROM denial_stats GROUP BY site_id ORDER BY site_id`,
      [OVERFLOW_ADDRESS],
    );
    assert.deepEqual(
      perSite.map((row) => [row.site_id, Number(row.addressed), Number(row.overflow_count), Number(row.overflow_addresses), Number(row.total)]),
      [
        // 50 addresses kept (the one with the most refusals among them); 450 more addresses, every refusal counted.
        ['1001', 50, 450, 450, 515],
        ['1002', 1, 0, 0, 1],
      ],
    );
    const kept = await pool.query<{ count: string }>("SELECT count::text FROM denial_stats WHERE site_id = 1001 AND client_ip = '10.9.0.7'");
    assert.equal(kept.rows[0]?.count, '16', 'the address with the most refusals kept its row');

    const text = await runCli(database.url, ['report', 'denials', '--limit', '5']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /site 1001: and 450 more addresses \(450 refusals/);
    assert.match(text.stdout, /and 46 more rows with fewer refusals; show them with --limit 51/);
    assert.equal(text.stdout.split('\n').filter((row) => /^100[12]\s/.test(row)).length, 5, text.stdout);
    assert.match(text.stdout, /1001\s+103\s+10\.9\.0\.7\s+no\s+16/);
    // --site names a site that must exist: the recorder's rows alone are not one.
    await pool.query('INSERT INTO sites (id) VALUES (1001) ON CONFLICT DO NOTHING');
    const json = JSON.parse((await runCli(database.url, ['report', 'denials', '--site', '1001', '--json'])).stdout) as Array<{ clientIp: string; moreAddresses: number }>;
    assert.equal(json.length, 50 + 1);
    assert.deepEqual(json.filter((row) => row.clientIp === OVERFLOW_ADDRESS).map((row) => row.moreAddresses), [450]);
    const badLimit = await runCli(database.url, ['report', 'denials', '--limit', 'all']);
    assert.equal(badLimit.code, 2);
    assert.match(badLimit.stderr, /--limit: "all" is not a number of rows from 1 to 100000, e\.g\. --limit 100/);
  });
});
