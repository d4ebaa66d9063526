import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { runCli } from '../../support/service.js';

/** token-client add/list/remove, site auth and site revoke-tokens against a real database, with their audit rows. */
describe('the token commands', () => {
  let database: TestDatabase;
  let sql: pg.Client;
  const cli = (...args: string[]) => runCli(database.url, args);
  const ok = async (...args: string[]) => {
    const result = await cli(...args);
    assert.equal(result.code, 0, result.stderr);
    return result.stdout;
  };
  const audited = async (action: string) =>
    (await sql.query<{ actor: string; site_id: string; details: Record<string, unknown> }>('SELECT actor, site_id::text, details FROM audit_log WHERE action = $1 ORDER BY id', [action])).rows;

  before(async () => {
    database = await freshDatabase();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    await ok('site', 'add', '1001');
    await ok('site', 'add', '1002');
  });
  after(async () => {
    await sql?.end();
    await database?.drop();
  });

  it('registers a client to one site, lists it, refuses it to a second site, and removes it', async () => {
    assert.match(await ok('token-client', 'add', '1001', 'partner-1001', '--note', 'Acme production', '--actor', 'am@example.com'), /registered token client partner-1001 for site 1001/);
    const listed = JSON.parse(await ok('token-client', 'list', '--json')) as Array<Record<string, unknown>>;
    assert.deepEqual(listed.map(({ clientId, siteId, note, lastUsedAt }) => ({ clientId, siteId, note, lastUsedAt })), [
      { clientId: 'partner-1001', siteId: '1001', note: 'Acme production', lastUsedAt: null },
    ]);
    assert.deepEqual(JSON.parse(await ok('token-client', 'list', '1002', '--json')), []);
    const twice = await cli('token-client', 'add', '1002', 'partner-1001');
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /already registered to site 1001; a client belongs to one site; `sitekey-authz token-client remove partner-1001` first/);
    assert.match(await ok('token-client', 'remove', 'partner-1001'), /removed token client partner-1001 of site 1001/);
    assert.deepEqual(JSON.parse(await ok('token-client', 'list', '--json')), []);
    assert.deepEqual((await audited('token-client.add')).map((row) => [row.actor, row.site_id, row.details['clientId']]), [['am@example.com', '1001', 'partner-1001']]);
    assert.deepEqual((await audited('token-client.remove')).map((row) => [row.site_id, row.details['clientId']]), [['1001', 'partner-1001']]);
  });

  it('says what to type for a bad client id, site, method or missing client', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['token-client', 'add', '1001', 'has space'], /"has space" is not a client id: expected .*visible ASCII characters, no spaces, e\.g\. partner-1001/],
      [['token-client', 'add', '1001', 'x'.repeat(256)], /is not a client id/],
      [['token-client', 'add', '1001', 'ok\u001b[2J'], /"ok\\u001b\[2J" is not a client id/],
      [['token-client', 'add', '9999', 'partner-9999'], /site 9999 does not exist; add it with `sitekey-authz site add 9999`/],
      [['token-client', 'remove', 'nobody'], /token client nobody is not registered; see the registered ones with `sitekey-authz token-client list`/],
      [['token-client', 'list', '9999'], /site 9999 does not exist/],
      [['site', 'auth', '1001', 'keys'], /both\|tokens: "keys" is not a method: choose both \(API keys and tokens\) or tokens \(tokens only\), e\.g\. tokens/],
      [['site', 'auth', '9999', 'tokens'], /site 9999 does not exist/],
      [['site', 'revoke-tokens', 'abc'], /not a site id|site id/],
    ];
    for (const [args, message] of cases) {
      const result = await cli(...args);
      assert.notEqual(result.code, 0, args.join(' '));
      assert.match(result.stderr, message, args.join(' '));
    }
  });

  it('switches a site between both and tokens, saying when nothing changed, audited', async () => {
    assert.match(await ok('site', 'auth', '1001', 'tokens'), /site 1001 now accepts access tokens only: its API keys are refused with 105/);
    assert.match(await ok('site', 'auth', '1001', 'TOKENS'), /site 1001 already accepts access tokens only/);
    assert.equal((await sql.query<{ auth_method: string }>('SELECT auth_method FROM sites WHERE id = 1001')).rows[0]?.auth_method, 'tokens');
    assert.match(await ok('site', 'auth', '1001', 'both'), /now accepts API keys and access tokens/);
    assert.deepEqual((await audited('site.auth')).map((row) => [row.details['authMethod'], row.details['previous']]), [['tokens', 'both'], ['both', 'tokens']]);
  });

  it("revokes a site's tokens issued before now, on the database's clock, audited", async () => {
    const out = JSON.parse(await ok('site', 'revoke-tokens', '1002', '--json')) as { siteId: string; tokensNotBefore: string };
    const stored = (await sql.query<{ at: Date }>('SELECT tokens_not_before AS at FROM sites WHERE id = 1002')).rows[0]?.at;
    assert.equal(out.tokensNotBefore, stored?.toISOString());
    assert.equal((await audited('site.revoke-tokens'))[0]?.details['tokensNotBefore'], out.tokensNotBefore);
  });
});
