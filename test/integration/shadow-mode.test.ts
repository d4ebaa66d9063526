import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { insertSite } from '../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict, type CheckArguments, type UpstreamCheckResponse } from '../support/envoy-client.js';
import { eventually } from '../support/eventually.js';
import { samples } from '../support/exposition.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const KEY = randomUUID();
const BROWNED_OUT = randomUUID();
const INSIDE = '203.0.113.7';
const OUTSIDE = '198.51.100.9';

type Answer = UpstreamCheckResponse & { ok_response?: { headers_to_remove?: string[] } };

/** SHADOW_MODE: in front of live traffic before it is trusted; every would-be denial is let through and reported. */
describe('shadow mode', () => {
  let database: TestDatabase;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;
  const ask = (args: CheckArguments) => check(client, args) as Promise<Answer>;
  const request = (site: string, key: string, ip = INSIDE, headers: Record<string, string> = {}): CheckArguments => ({
    authorization: `${site}:${key}`,
    ip,
    body: JSON.stringify({ siteid: Number(site), apikey: key }),
    headers,
  });
  const siteHeader = (answer: Answer) => answer.ok_response?.headers.find(({ header }) => header.key === 'x-site-id')?.header.value;

  before(async () => {
    database = await freshDatabase();
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    await insertSite(sql, { id: '1001', keys: [{ key: KEY }], cidrs: ['203.0.113.0/24'] });
    await insertSite(sql, { id: '1002', keys: [{ key: BROWNED_OUT }], cidrs: ['203.0.113.0/24'] });
    await sql.query("INSERT INTO brownouts (starts_at, ends_at, site_ids) VALUES (now() - interval '1 hour', now() + interval '1 hour', ARRAY[1002]::bigint[])");
    await sql.end();
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', SHADOW_MODE: 'true', LAST_USED_FLUSH_SECONDS: '1' });
    client = authorizationClient(service.grpcTarget);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await database?.drop();
  });

  it('allows every check, with x-site-id only where the credentials were good', async () => {
    const good = await ask(request('1001', KEY));
    assert.equal(verdict(good), 'allow');
    assert.equal(siteHeader(good), '1001');

    const sunset = await ask(request('1002', BROWNED_OUT));
    assert.equal(verdict(sunset), 'allow', 'a brownout would refuse it (105)');
    assert.equal(siteHeader(sunset), '1002', 'the credentials were valid');

    for (const args of [
      request('1001', KEY, OUTSIDE, { 'x-site-id': '1001' }),
      request('1001', randomUUID(), INSIDE, { 'x-site-id': '1001' }),
      { ip: INSIDE, headers: { 'x-site-id': '1001' } },
      request('4242', KEY),
    ]) {
      const answer = await ask(args);
      assert.equal(verdict(answer), 'allow', JSON.stringify(args));
      assert.equal(siteHeader(answer), undefined);
      assert.ok(answer.ok_response?.headers_to_remove?.includes('x-site-id'), 'a forged x-site-id does not reach the upstream');
      assert.ok(answer.dynamic_metadata?.fields['shadow_error_id'] !== undefined);
    }
  });

  it('logs and counts each would-be denial as a shadow denial, and reports it as such', async () => {
    await ask(request('1001', KEY, OUTSIDE));
    assert.match(service.output(), /"event":"check\.shadow-denied".*"errorId":103/);
    assert.doesNotMatch(service.output(), /"event":"check\.denied"/);

    const exposition = await (await fetch(`${service.httpBase}/metrics`)).text();
    const checks = samples(exposition, 'sitekey_authz_checks_total');
    assert.ok((checks.get('{outcome="shadow_denied",error_id="103",site="1001"}') ?? 0) >= 2, exposition);
    assert.ok((checks.get('{outcome="shadow_denied",error_id="108",site="other"}') ?? 0) >= 1);
    assert.equal([...checks.keys()].some((labels) => labels.includes('outcome="denied"')), false, 'nothing was denied');

    type Row = { errorId: number; shadow: boolean; count: number };
    const rows = await eventually(
      'the shadow denials reached the report',
      async () => JSON.parse((await runCli(database.url, ['report', 'denials', '--site', '1001', '--json'])).stdout) as Row[],
      (found) => found.some((row) => row.errorId === 103 && row.shadow),
      5_000,
    );
    assert.ok(rows.every((row) => row.shadow));
    const shown = await runCli(database.url, ['report', 'denials', '--site', '1001']);
    assert.match(shown.stdout, /1001 +103 \(shadow\) +198\.51\.100\.9 .* yes: let through/);
  });

  it('explain says that SHADOW_MODE lets the would-be denial through', async () => {
    const args = ['explain', '--authorization', `1001:${KEY}`, '--ip', OUTSIDE, '--body', JSON.stringify({ siteid: 1001, apikey: KEY })];
    const shadowed = await runCli(database.url, args, undefined, { SHADOW_MODE: 'true' });
    assert.equal(shadowed.code, 1, shadowed.stderr);
    assert.match(shadowed.stdout, /103/);
    assert.match(shadowed.stderr, /SHADOW_MODE is on here: a service running with it lets this request through/);
    const enforced = await runCli(database.url, args);
    assert.equal(enforced.code, 1, enforced.stderr);
    assert.doesNotMatch(enforced.stderr, /SHADOW_MODE/);
  });
});
