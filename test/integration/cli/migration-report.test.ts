import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createLogger } from '../../../src/observe/logger.js';
import { AuthUsageRecorder } from '../../../src/store/auth-usage-recorder.js';
import { LastUsedRecorder } from '../../../src/store/last-used-recorder.js';
import { insertSite } from '../../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { runCli } from '../../support/service.js';
import type { MigrationSiteRow } from '../../../src/store/sunset-reports.js';

/** A row of `report migration --sites --json`, as the store makes it. */
type SiteRow = MigrationSiteRow;

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * The migration report per site, from what the replicas counted: how much of each site's traffic is
 * on tokens, and whether `site auth <id> tokens` today would refuse anyone.
 */
describe('report migration --sites', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  const clientUsedAt = new Date(Date.now() - 2 * HOUR_MS);

  const cli = async (...args: string[]) => {
    const result = await runCli(database.url, args);
    assert.equal(result.code, 0, result.stderr);
    return result.stdout;
  };

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    // 1001 moving (keys and tokens), 1002 moved (tokens only, still on both), 1003 switched to tokens,
    // 1004 whose keys were last used before the window, 1005 quiet.
    for (const id of ['1001', '1002', '1003', '1004', '1005']) await insertSite(pool, { id, keys: [{ key: `k${id}`.padEnd(40, '0') }], cidrs: ['10.0.0.0/8'] });
    await pool.query("UPDATE sites SET auth_method = 'tokens' WHERE id = 1003");
    await pool.query("UPDATE api_keys SET last_used_at = now() - interval '40 days' WHERE site_id IN (1003, 1004)");
    for (const [clientId, siteId] of [['moving-a', '1001'], ['moving-b', '1001'], ['moved', '1002'], ['switched', '1003']] as const) {
      const added = await runCli(database.url, ['token-client', 'add', siteId, clientId]);
      assert.equal(added.code, 0, added.stderr);
    }

    const usage = new AuthUsageRecorder({ pool, flushSeconds: 3_600, retentionDays: 400, maxGroups: 100, logger: createLogger('silent') });
    const clientsLastUsed = new LastUsedRecorder({ pool, of: 'token_clients', flushSeconds: 3_600, logger: createLogger('silent') });
    // What serve's observer records of an allowed check.
    const allowed = (siteId: string, method: 'token' | 'api_key', clientId: string | undefined, at: number) => {
      usage.record(siteId, method, at);
      if (clientId !== undefined) clientsLastUsed.record(clientId, at);
    };
    const now = Date.now();
    for (let i = 0; i < 3; i++) allowed('1001', 'token', 'moving-a', now - i * HOUR_MS);
    allowed('1001', 'token', 'moving-b', clientUsedAt.getTime());
    allowed('1001', 'api_key', undefined, now);
    for (let i = 0; i < 5; i++) allowed('1002', 'token', 'moved', now - DAY_MS);
    allowed('1003', 'token', 'switched', now - 3 * DAY_MS);
    await Promise.all([usage.stop(), clientsLastUsed.stop()]);
    // Counted before the window: neither requests nor a reason to refuse, but still the last token use.
    await pool.query(
      `INSERT INTO auth_usage (hour, site_id, method, count, last_seen) VALUES
         (date_trunc('hour', now() - interval '45 days'), 1002, 'api_key', 50, now() - interval '45 days'),
         (date_trunc('hour', now() - interval '45 days'), 1004, 'token', 7, now() - interval '45 days')`,
    );
  });

  after(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('counts token and key requests in the window, the share on tokens and who a switch would refuse', async () => {
    const rows = JSON.parse(await cli('report', 'migration', '--sites', '--json')) as SiteRow[];
    assert.deepEqual(
      rows.map(({ siteId, authMethod, tokenRequests, keyRequests, tokenShare, tokenClients, wouldRefuseOnTokens }) => ({
        siteId,
        authMethod,
        tokenRequests,
        keyRequests,
        tokenShare,
        tokenClients,
        wouldRefuseOnTokens,
      })),
      [
        { siteId: '1001', authMethod: 'both', tokenRequests: 4, keyRequests: 1, tokenShare: 0.8, tokenClients: 2, wouldRefuseOnTokens: true },
        { siteId: '1002', authMethod: 'both', tokenRequests: 5, keyRequests: 0, tokenShare: 1, tokenClients: 1, wouldRefuseOnTokens: false },
        { siteId: '1003', authMethod: 'tokens', tokenRequests: 1, keyRequests: 0, tokenShare: 1, tokenClients: 1, wouldRefuseOnTokens: false },
      ],
    );
    const [moving, moved, switched] = rows;
    const { rows: clients } = await pool.query<{ client_id: string; last_used_at: Date }>('SELECT client_id, last_used_at FROM token_clients ORDER BY client_id');
    const lastUse = new Map(clients.map((row) => [row.client_id, row.last_used_at.toISOString()]));
    assert.equal(moving?.lastTokenUseAt, lastUse.get('moving-a'), 'the latest of its clients');
    assert.ok((lastUse.get('moving-b') ?? '') < (lastUse.get('moving-a') ?? ''));
    assert.equal(moved?.lastTokenUseAt, lastUse.get('moved'));
    assert.ok(Date.parse(switched?.lastKeyUseAt ?? '') < Date.now() - 39 * DAY_MS, `a key used before the window: ${switched?.lastKeyUseAt}`);
    assert.equal(moving?.lastKeyUseAt, null, 'the recorder counts requests; api_keys.last_used_at is the key recorder\'s');
  });

  it('reads the window from --since: older counts come in, and old key use makes a switch refuse', async () => {
    const rows = JSON.parse(await cli('report', 'migration', '--sites', '--since', '60', '--json')) as SiteRow[];
    assert.deepEqual(
      rows.map(({ siteId, tokenRequests, keyRequests, wouldRefuseOnTokens }) => [siteId, tokenRequests, keyRequests, wouldRefuseOnTokens]),
      [
        ['1002', 5, 50, true],
        ['1001', 4, 1, true],
        ['1004', 7, 0, true],
        ['1003', 1, 0, false],
      ],
    );
    const old = rows.find((row) => row.siteId === '1004');
    assert.ok(Date.parse(old?.lastTokenUseAt ?? '') < Date.now() - 44 * DAY_MS, `the hourly counts give the last token use of a site without clients: ${old?.lastTokenUseAt}`);
  });

  it('warns when --since reaches back before the oldest request counts held, whatever this terminal sets', async () => {
    // The oldest counts are the 45-day-old hour of before(): a 60-day window begins before them.
    const beyond = await runCli(database.url, ['report', 'migration', '--sites', '--since', '60', '--json'], undefined, { AUTH_USAGE_RETENTION_DAYS: '3650' });
    assert.equal(beyond.code, 0, beyond.stderr);
    const { rows } = await pool.query<{ hour: Date }>('SELECT min(hour) AS hour FROM auth_usage');
    const oldest = `${rows[0]!.hour.toISOString().slice(0, 16).replace('T', ' ')}Z`;
    assert.match(
      beyond.stderr,
      new RegExp(`^warning: the oldest request counts held are from ${oldest}: token requests, key requests and the share on tokens count from then, not from \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\dZ \\(serve deletes counts older than AUTH_USAGE_RETENTION_DAYS, and counted none before its first request\\)\\n$`),
    );
    assert.ok(Array.isArray(JSON.parse(beyond.stdout)), 'the report itself is still printed');
    const within = await runCli(database.url, ['report', 'migration', '--sites', '--since', '30'], undefined, { AUTH_USAGE_RETENTION_DAYS: '1' });
    assert.equal(within.code, 0, within.stderr);
    assert.equal(within.stderr, '', 'a window within the counts held gets no warning, even where this terminal sets a shorter retention');
  });

  it('prints a table for people and CSV with fixed columns', async () => {
    const text = await cli('report', 'migration', '--sites');
    assert.match(text.split('\n')[0] ?? '', /^SITE\s+NAME\s+METHOD\s+TOKEN REQS\s+KEY REQS\s+ON TOKENS\s+LAST TOKEN USE\s+LAST KEY USE\s+CLIENTS\s+TOKENS-ONLY REFUSES/);
    assert.match(text, /\n1001 .*both\s+4\s+1\s+80\.0 %.*yes: keys in use/);
    assert.match(text, /\n1003 .*tokens\s+1\s+0\s+100\.0 %.*\bno\b/);
    const csv = (await cli('report', 'migration', '--sites', '--csv')).trim().split('\n');
    assert.equal(
      csv[0],
      'site_id,site_name,auth_method,token_requests,key_requests,token_share,last_token_use_at,last_key_use_at,token_clients,would_refuse_on_tokens,cutoff_at,days_left',
    );
    assert.match(csv[1] ?? '', /^1001,,both,4,1,0\.8,[^,]+,,2,true,/);
    assert.equal(csv.length, 4);
  });

  it('keeps the per-key report as it was without --sites', async () => {
    const keys = JSON.parse(await cli('report', 'migration', '--since', '60', '--json')) as Array<{ siteId: string; keyId: string }>;
    assert.deepEqual(keys.map((row) => row.siteId), ['1003', '1004']);
    const day = await cli('report', 'migration', '--sites', '--since', '1');
    assert.match(day, /^1001 /m, 'a site that sent requests this hour is in a one-day window');
    assert.doesNotMatch(day, /^100[2-5] /m);
  });
});
