import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createLogger } from '../../../src/observe/logger.js';
import { NO_SITE, OTHER_CLIENTS, TokenRefusalRecorder } from '../../../src/store/token-refusal-recorder.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

/** Refused tokens are counted by their client's site, bounded in memory and per site and hour, whoever sends them. */
describe('token refusal recorder', () => {
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
      await pool.query<{ site_id: string; client_id: string; error_id: number; rule: string; signed: boolean; count: string }>(
        'SELECT site_id::text, client_id, error_id, rule, signed, sum(count)::text AS count FROM token_refusal_stats GROUP BY 1, 2, 3, 4, 5 ORDER BY 6 DESC, 2',
      )
    ).rows.map((row) => [row.site_id, row.client_id, row.error_id, row.rule, row.signed, Number(row.count)]);

  it('counts a site’s refused tokens by client, rule and signature, adding across flushes', async () => {
    const recorder = new TokenRefusalRecorder({ pool, flushSeconds: 3_600, retentionDays: 30, maxGroups: 100, logger: createLogger('silent') });
    const now = Date.now();
    recorder.record({ siteId: '1001', clientId: 'acme-app', errorId: 106, rule: 'expired', signed: true }, now);
    recorder.record({ siteId: '1001', clientId: 'acme-app', errorId: 106, rule: 'expired', signed: true }, now);
    await recorder.flush();
    recorder.record({ siteId: '1001', clientId: 'acme-app', errorId: 106, rule: 'expired', signed: true }, now);
    recorder.record({ siteId: '1001', clientId: 'acme-app', errorId: 106, rule: 'signature', signed: false }, now);
    recorder.record({ siteId: NO_SITE, clientId: 'stray-app', errorId: 107, rule: '', signed: true }, now);
    await recorder.stop();
    assert.deepEqual(await rows(), [
      ['1001', 'acme-app', 106, 'expired', true, 3],
      ['1001', 'acme-app', 106, 'signature', false, 1],
      ['0', 'stray-app', 107, '', true, 1],
    ]);
  });

  it('keeps at most its cap of clients per site and hour, in memory and in the table, and counts the rest as "other"', async () => {
    await pool.query('DELETE FROM token_refusal_stats');
    const now = Date.now();
    const small = new TokenRefusalRecorder({ pool, flushSeconds: 3_600, retentionDays: 30, maxGroups: 50, maxRowsPerSiteHour: 10, logger: createLogger('silent') });
    for (let i = 0; i < 5_000; i++) small.record({ siteId: NO_SITE, clientId: `client-${i}`, errorId: 107, rule: '', signed: true }, now);
    assert.ok(small.size <= 51, `${small.size} groups held`);
    await small.flush();
    for (let i = 5_000; i < 5_040; i++) small.record({ siteId: NO_SITE, clientId: `client-${i}`, errorId: 107, rule: '', signed: true }, now);
    await small.stop();
    const written = await rows();
    const named = written.filter((row) => row[1] !== OTHER_CLIENTS);
    assert.equal(named.length, 10, 'the cap of clients per site and hour');
    assert.equal(written.find((row) => row[1] === OTHER_CLIENTS)?.[5], 5_040 - 10);
    assert.equal(written.reduce((sum, row) => sum + (row[5] as number), 0), 5_040, 'no refusal is lost');
  });
});
