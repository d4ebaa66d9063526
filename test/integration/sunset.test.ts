import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict, type UpstreamCheckResponse } from '../support/envoy-client.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const GUIDE = 'https://developers.example.com/tokens';
const PROPAGATION_MS = 1_000;
const ALLOWED_IP = '203.0.113.7';
const STRANGER_IP = '198.51.100.9';

interface Issued {
  readonly apiKey: string;
  readonly keyId: string;
}

type OkResponse = UpstreamCheckResponse & {
  ok_response: { response_headers_to_add: Array<{ header: { key: string; value: string } }>; headers_to_remove: string[] };
};

/** Issue #11, end to end: serve and the CLI on one real database, checks over gRPC with Envoy's protos. */
describe('the API-key sunset', () => {
  let database: TestDatabase;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;
  const keys = new Map<string, Issued>();

  async function cli(...args: string[]): Promise<string> {
    const result = await runCli(database.url, args);
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  }
  const env = {
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'info',
    MIGRATION_GUIDE_URL: GUIDE,
    STRIP_AUTHORIZATION: 'true',
    LAST_USED_FLUSH_SECONDS: '1',
  };
  const ask = (site: string, ip = ALLOWED_IP) => {
    const { apiKey } = keys.get(site) as Issued;
    return check(client, { authorization: `${site}:${apiKey}`, ip, body: JSON.stringify({ siteid: Number(site), apikey: apiKey }) });
  };
  const outcome = async (site: string, ip = ALLOWED_IP) => verdict(await ask(site, ip));
  async function start(extra: Record<string, string> = {}): Promise<void> {
    service = await startService({ DATABASE_URL: database.url, ...env, ...extra });
    client = authorizationClient(service.grpcTarget);
  }
  async function stop(): Promise<void> {
    client?.close();
    assert.equal(await service.stop(), 0);
  }
  /** Milliseconds from a committed change until the service answers `expected` for `site`. */
  async function timeUntil(site: string, expected: 'allow' | number): Promise<number> {
    const started = performance.now();
    while ((await outcome(site)) !== expected) {
      if (performance.now() - started > 5_000) assert.fail(`site ${site} never answered ${expected}`);
      await sleep(10);
    }
    return performance.now() - started;
  }

  before(async () => {
    database = await freshDatabase();
    for (const site of ['1001', '1002', '1003']) {
      await cli('site', 'add', site);
      await cli('ip', 'allow', site, '203.0.113.0/24');
      keys.set(site, JSON.parse(await cli('key', 'issue', site, '--json')) as Issued);
    }
    await start();
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await database?.drop();
  });

  it('tells partners on every allowed response, and strips the credentials for the upstream', async () => {
    const response = (await ask('1001')) as OkResponse;
    assert.equal(verdict(response), 'allow');
    const added = response.ok_response.response_headers_to_add.map(({ header }) => `${header.key}: ${header.value}`);
    assert.deepEqual(added, [
      'deprecation: @1798761599',
      'sunset: Thu, 31 Dec 2026 23:59:59 GMT',
      `link: <${GUIDE}>; rel="deprecation"`,
      `link: <${GUIDE}>; rel="sunset"`,
    ]);
    assert.deepEqual(response.ok_response.headers_to_remove, ['authorization']);
    const denied = await ask('1001', STRANGER_IP);
    assert.equal(verdict(denied), 103);
    assert.equal(denied.ok_response, undefined);
    assert.doesNotMatch(JSON.stringify(denied), /deprecation|sunset/i);
  });

  it('refuses during a brownout within a second, lets a site with grace pass, and stops when cancelled', async () => {
    const from = new Date(Date.now() - 60_000).toISOString();
    const until = new Date(Date.now() + 3_600_000).toISOString();
    await cli('site', 'grace', '1002', '--until', '2027-03-31');
    const added = JSON.parse(await cli('brownout', 'add', '--from', from, '--until', until, '--note', 'rehearsal 1', '--json')) as { brownoutId: string };
    assert.ok((await timeUntil('1001', 105)) < PROPAGATION_MS, 'the brownout reached the service within a second');
    const refused = await ask('1001');
    const body = JSON.parse(refused.denied_response?.body ?? '{}') as { error: { id: number; message: string } };
    assert.equal(refused.denied_response?.status.code, 'Unauthorized');
    assert.match(body.error.message, /brownout ahead of its retirement on 2026-12-31; migrate to token-based authentication; migration guide: https:\/\/developers\.example\.com\/tokens$/);
    assert.equal(await outcome('1002'), 'allow', 'grace passes');
    assert.equal(await outcome('1003'), 105);
    // Bad credentials keep their own answer: a 105 tells a stranger nothing.
    assert.equal(await outcome('1001', STRANGER_IP), 103);

    await cli('site', 'grace', '1003', '--until', '2027-01-15T00:00:00Z');
    assert.ok((await timeUntil('1003', 'allow')) < PROPAGATION_MS, 'a new grace reached the service within a second');
    await cli('site', 'grace', '1003', '--clear');
    assert.ok((await timeUntil('1003', 105)) < PROPAGATION_MS, 'a cleared grace reached the service within a second');

    await cli('brownout', 'cancel', added.brownoutId);
    assert.ok((await timeUntil('1001', 'allow')) < PROPAGATION_MS, 'the cancellation reached the service within a second');
    const listed = JSON.parse(await cli('brownout', 'list', '--json')) as Array<{ brownoutId: string; state: string }>;
    assert.deepEqual(listed.map((b) => [b.brownoutId, b.state]), [[added.brownoutId, 'cancelled']]);
    await cli('site', 'grace', '1002', '--clear');
  });

  it('refuses nobody in a dry-run brownout, and counts who would have been refused', async () => {
    type ReportRow = { errorId: number; rehearsal: boolean; count: number };
    await sleep(1_500); // the last test's refusals reach the database with the next flush
    const refusedBefore = (JSON.parse(await cli('report', 'denials', '--site', '1003', '--json')) as ReportRow[])
      .filter((row) => row.errorId === 105 && !row.rehearsal)
      .reduce((sum, row) => sum + row.count, 0);
    const from = new Date(Date.now() - 60_000).toISOString();
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const added = JSON.parse(await cli('brownout', 'add', '--from', from, '--until', until, '--site', '1003', '--dry-run', '--json')) as { brownoutId: string };
    const started = performance.now();
    while (!/check\.rehearsed/.test(service.output())) {
      assert.equal(await outcome('1003'), 'allow');
      if (performance.now() - started > 5_000) assert.fail('no rehearsal was logged');
      await sleep(20);
    }
    await cli('brownout', 'cancel', added.brownoutId);
    await sleep(1_500); // one flush
    const report = JSON.parse(await cli('report', 'denials', '--site', '1003', '--json')) as ReportRow[];
    const rehearsed = report.find((row) => row.errorId === 105 && row.rehearsal);
    assert.ok(rehearsed && rehearsed.count >= 1, JSON.stringify(report));
    const refusedAfter = report.filter((row) => row.errorId === 105 && !row.rehearsal).reduce((sum, row) => sum + row.count, 0);
    assert.equal(refusedAfter, refusedBefore, 'the dry run refused nobody');
  });

  it('counts refusals by site, error and client address across a flush and a restart', async () => {
    for (let i = 0; i < 3; i++) assert.equal(await outcome('1002', STRANGER_IP), 103);
    await stop();
    await start();
    for (let i = 0; i < 2; i++) assert.equal(await outcome('1002', STRANGER_IP), 103);
    await sleep(1_500);
    const report = JSON.parse(await cli('report', 'denials', '--site', '1002', '--json')) as Array<Record<string, unknown>>;
    assert.deepEqual(
      report.map(({ siteId, errorId, clientIp, rehearsal, count }) => ({ siteId, errorId, clientIp, rehearsal, count })),
      [{ siteId: '1002', errorId: 103, clientIp: STRANGER_IP, rehearsal: false, count: 5 }],
    );
    const text = await cli('report', 'denials', '--site', '1002');
    assert.match(text, /1002\s+103\s+198\.51\.100\.9\s+no\s+5/);
    const csv = await cli('report', 'denials', '--csv');
    assert.equal(csv.split('\n')[0], 'site_id,error_id,client_ip,rehearsal,count,first_seen,last_seen,shadow');
  });

  it('lists exactly the sites that used an API key in the window, most recent first', async () => {
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    try {
      await sql.query("UPDATE api_keys SET last_used_at = now() - interval '2 hours' WHERE site_id = 1001");
      await sql.query("UPDATE api_keys SET last_used_at = now() - interval '40 days' WHERE site_id = 1002");
      await sql.query('UPDATE api_keys SET last_used_at = NULL WHERE site_id = 1003');
      await sql.query("UPDATE sites SET apikey_grace_until = '2027-03-31T00:00:00Z' WHERE id = 1002");
    } finally {
      await sql.end();
    }
    const month = JSON.parse(await cli('report', 'migration', '--json')) as Array<{ siteId: string; keyId: string; maskedKey: string }>;
    assert.deepEqual(month.map((row) => row.siteId), ['1001']);
    assert.equal(month[0]?.keyId, keys.get('1001')?.keyId);
    assert.match(month[0]?.maskedKey ?? '', /^\*{5}[0-9a-f]{5}$/);
    const twoMonths = JSON.parse(await cli('report', 'migration', '--since', '60', '--json')) as Array<{ siteId: string; graceUntil: string | null; daysLeft: number }>;
    assert.deepEqual(twoMonths.map((row) => row.siteId), ['1001', '1002']);
    assert.equal(twoMonths[1]?.graceUntil, '2027-03-31T00:00:00.000Z');
    assert.ok((twoMonths[1]?.daysLeft ?? 0) > (twoMonths[0]?.daysLeft ?? 0), 'grace gives more days');
    const csv = (await cli('report', 'migration', '--since', '60', '--csv')).trim().split('\n');
    assert.equal(csv[0], 'site_id,site_name,key_id,masked_key,last_used_at,grace_until,cutoff_at,days_left');
    assert.equal(csv.length, 3);
    for (const [site, { apiKey }] of keys) assert.doesNotMatch(csv.join('\n'), new RegExp(apiKey), `site ${site}'s key`);
    const refused = await runCli(database.url, ['report', 'migration', '--since', 'a month']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /--since: "a month" is not a number of days from 1 to 3650, e\.g\. --since 30/);
  });

  describe('after the sunset, with enforcement on', () => {
    let enforced: RunningService;
    let enforcedClient: ReturnType<typeof authorizationClient>;

    before(async () => {
      await cli('site', 'grace', '1002', '--until', '2099-01-01');
      // The database holds the policy the first serve seeded: enforcement is set there, not in serve's environment.
      await cli('sunset', 'set', '--at', '2026-01-01T00:00:00Z', '--enforce');
      enforced = await startService({ DATABASE_URL: database.url, ...env });
      enforcedClient = authorizationClient(enforced.grpcTarget);
    });

    after(async () => {
      enforcedClient?.close();
      await enforced?.stop();
    });

    it('refuses valid credentials with 105, spares grace, and keeps every other answer', async () => {
      const ask = (site: string, key = keys.get(site)?.apiKey ?? '') =>
        check(enforcedClient, { authorization: `${site}:${key}`, ip: ALLOWED_IP, body: JSON.stringify({ siteid: Number(site), apikey: key }) });
      const retired = await ask('1001');
      assert.equal(
        retired.denied_response?.body,
        JSON.stringify({ error: { id: 105, message: `API key authentication has been retired; use token-based authentication; migration guide: ${GUIDE}` } }),
      );
      assert.equal(verdict(await ask('1002')), 'allow');
      assert.equal(verdict(await ask('1001', '00000000-0000-4000-8000-000000000000')), 102);
    });
  });
});
