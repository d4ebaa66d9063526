import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { insertSite } from '../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict, type UpstreamCheckResponse } from '../support/envoy-client.js';
import { eventually } from '../support/eventually.js';
import { samples } from '../support/exposition.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const KEY = randomUUID();
const INSIDE = '203.0.113.7';
// The environment serve starts with: a sunset already past, enforced.
const SERVE_SUNSET = '2026-11-01T00:00:00.000Z';
const SET_SUNSET = '2027-06-30T00:00:00.000Z';
const GUIDE = 'https://developers.example.com/tokens';
const WITHIN_MS = 1_000;

type OkResponse = UpstreamCheckResponse & { ok_response?: { response_headers_to_add: Array<{ header: { key: string; value: string } }> } };

/** One truth: the sunset policy lives in the database, and serve, its workers, explain, the reports and the metrics follow it. */
describe('the sunset policy in the database', () => {
  let database: TestDatabase;
  let service: RunningService;
  const request = { authorization: `1001:${KEY}`, ip: INSIDE, body: JSON.stringify({ siteid: 1001, apikey: KEY }) };

  /** A verdict from each of several connections: with two workers, each connection lands on one of them. */
  async function verdicts(): Promise<Array<'allow' | number>> {
    const clients = Array.from({ length: 4 }, () => authorizationClient(service.grpcTarget, { 'grpc.use_local_subchannel_pool': 1 }));
    try {
      return await Promise.all(clients.map(async (client) => verdict(await check(client, request))));
    } finally {
      for (const client of clients) client.close();
    }
  }
  const cli = async (args: string[], env: Record<string, string> = {}) => runCli(database.url, args, undefined, env);
  const explain = () => cli(['explain', '--authorization', `1001:${KEY}`, '--ip', INSIDE, '--body', request.body, '--json']);

  before(async () => {
    database = await freshDatabase();
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    await insertSite(sql, { id: '1001', keys: [{ key: KEY }], cidrs: ['203.0.113.0/24'] });
    await sql.query('UPDATE api_keys SET last_used_at = now()');
    await sql.end();
    service = await startService({
      DATABASE_URL: database.url,
      MIGRATE_ON_START: 'false',
      WORKERS: '2',
      APIKEY_SUNSET_AT: SERVE_SUNSET,
      APIKEY_SUNSET_ENFORCE: 'true',
    });
  });

  after(async () => {
    await service?.stop();
    await database?.drop();
  });

  it('is seeded from the environment of the first serve, and a CLI with another environment follows it', async () => {
    const shown = await eventually(
      'serve seeded the policy',
      async () => JSON.parse((await cli(['sunset', 'show', '--json'])).stdout) as { sunsetAt: string; enforce: boolean; source: string },
      (policy) => policy.source === 'database',
      5_000,
    );
    assert.deepEqual({ ...shown, updatedAt: undefined }, { sunsetAt: SERVE_SUNSET, enforce: true, guideUrl: null, source: 'database', updatedAt: undefined });
    assert.deepEqual(await verdicts(), [105, 105, 105, 105]);
    // This terminal's environment says nothing of a sunset (the default: not enforced); explain follows the database.
    const explained = await explain();
    assert.equal(explained.code, 1, explained.stderr);
    assert.equal((JSON.parse(explained.stdout) as { error: { id: number } }).error.id, 105);
  });

  it('changes with `sunset set` in every worker within a second, and explain, the reports and the metrics agree', async () => {
    const set = await cli(['sunset', 'set', '--at', SET_SUNSET, '--no-enforce', '--guide', GUIDE, '--actor', 'alice', '--json']);
    assert.equal(set.code, 0, set.stderr);
    const started = performance.now();
    await eventually('every worker follows', verdicts, (all) => all.every((one) => one === 'allow'), 5_000);
    assert.ok(performance.now() - started < WITHIN_MS, `took ${Math.round(performance.now() - started)} ms`);

    const client = authorizationClient(service.grpcTarget);
    const allowed = (await check(client, request)) as OkResponse;
    client.close();
    const headers = allowed.ok_response?.response_headers_to_add.map(({ header }) => `${header.key}: ${header.value}`);
    assert.deepEqual(headers, [
      'deprecation: @1814313600',
      'sunset: Wed, 30 Jun 2027 00:00:00 GMT',
      `link: <${GUIDE}>; rel="deprecation"`,
      `link: <${GUIDE}>; rel="sunset"`,
    ]);

    // Another terminal whose environment says otherwise still agrees with the database.
    const otherEnv = { APIKEY_SUNSET_AT: '2026-01-01T00:00:00Z', APIKEY_SUNSET_ENFORCE: 'true' };
    const explained = await runCli(database.url, ['explain', '--authorization', `1001:${KEY}`, '--ip', INSIDE, '--body', request.body, '--json'], undefined, otherEnv);
    assert.equal(explained.code, 0, explained.stderr);
    const report = await runCli(database.url, ['report', 'migration', '--json'], undefined, otherEnv);
    const [row] = JSON.parse(report.stdout) as Array<{ cutoffAt: string }>;
    assert.equal(row?.cutoffAt, SET_SUNSET);

    const exposition = await (await fetch(`${service.httpBase}/metrics`)).text();
    assert.deepEqual([...samples(exposition, 'sitekey_authz_apikey_sunset_timestamp_seconds').values()], [Date.parse(SET_SUNSET) / 1000]);

    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    const { rows } = await sql.query<{ actor: string; details: { policy: { sunsetAt: string }; previous: { sunsetAt: string } } }>(
      "SELECT actor, details FROM audit_log WHERE action = 'sunset.set'",
    );
    await sql.end();
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.actor, 'alice');
    assert.equal(rows[0]?.details.policy.sunsetAt, SET_SUNSET);
    assert.equal(rows[0]?.details.previous.sunsetAt, SERVE_SUNSET);
  });

  it('says once, in each process whose environment disagrees, that it follows the database', async () => {
    await eventually('both workers said so', async () => service.output(), (output) => (output.match(/disagree with the sunset policy in the database/g) ?? []).length >= 2, 5_000);
    const said = service.output().match(/"worker":\d+[^\n]*disagree with the sunset policy/g) ?? [];
    assert.equal(new Set(said.map((line) => /"worker":(\d+)/.exec(line)?.[1])).size, said.length, 'each worker said it once');
    assert.match(service.output(), /"variables":\["APIKEY_SUNSET_AT","APIKEY_SUNSET_ENFORCE"\]/);
  });

  it('refuses values that are not what they seem', async () => {
    for (const [args, said] of [
      [['--at', '2026-02-30'], /not an ISO 8601 date or time with a zone on a day the calendar has/],
      [['--guide', 'http://developers.example.com/'], /must be an https:\/\/ URL, not http:/],
      [['--guide', 'https://developers.example.com/\u0001'], /printable ASCII/],
      [['--guide', 'https://developers.example.com/über'], /printable ASCII/],
      [[], /nothing to change/],
      [['--enforce', '--no-enforce'], /not both/],
    ] as const) {
      const result = await cli(['sunset', 'set', ...args]);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, said);
    }
    const configured = await cli(['sunset', 'show'], { APIKEY_SUNSET_AT: '2026-02-30T00:00:00Z' });
    assert.equal(configured.code, 2);
    assert.match(configured.stderr, /APIKEY_SUNSET_AT: expected an ISO 8601 date-time with a zone, on a day the calendar has/);
    const guide = await cli(['sunset', 'show'], { MIGRATION_GUIDE_URL: 'http://developers.example.com/' });
    assert.match(guide.stderr, /MIGRATION_GUIDE_URL: must be an https:\/\/ URL/);
  });
});
