import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict, type UpstreamCheckResponse } from '../support/envoy-client.js';
import { eventually } from '../support/eventually.js';
import { samples } from '../support/exposition.js';
import { signedToken, signingKey } from '../support/jwks-server.js';
import { startTestIssuer, type TestIssuer, type TestIssuerClient } from '../support/oidc-issuer.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const WORKERS = 2;
// Connections of their own, enough that the primary's turns give each worker several.
const CONNECTIONS = 6;
const PROPAGATION_BOUND_MS = 1_000;
const PARTNER: TestIssuerClient = { clientId: 'partner-1001', clientSecret: 'secret-of-partner-1001' };
const STRANGER: TestIssuerClient = { clientId: 'partner-9999', clientSecret: 'secret-of-partner-9999' };

const headerValue = (response: UpstreamCheckResponse, name: string, where: 'denied' | 'ok' = 'denied'): string | undefined => {
  const options = where === 'denied' ? response.denied_response?.headers : response.ok_response?.headers;
  return options?.find((option) => option.header?.key === name)?.header?.value;
};

/**
 * Token-based authentication end to end: a real OpenID provider (oidc-provider) mints client-credentials
 * access tokens, `serve` with two workers verifies them, and the CLI moves a site from keys to tokens.
 */
describe('access tokens from a real issuer, beside API keys', () => {
  let database: TestDatabase;
  let issuer: TestIssuer;
  let service: RunningService;
  let sql: pg.Client;
  let key: string;
  let clients: Array<ReturnType<typeof authorizationClient>> = [];

  const cli = async (...args: string[]) => {
    const result = await runCli(database.url, args);
    assert.equal(result.code, 0, result.stderr);
    return result.stdout;
  };
  const bearer = (token: string, body?: unknown) => ({ authorization: `Bearer ${token}`, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const keyRequest = () => ({ authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) });
  /** The verdict of every connection, hence of every worker. */
  const everyWorker = (args: Parameters<typeof check>[1]) => Promise.all(clients.map(async (client) => verdict(await check(client, args))));
  const metrics = async () => (await fetch(`${service.httpBase}/metrics`)).text();

  /** Milliseconds from the commit that `committed` sees until every connection answers `expected`. */
  async function fromCommit(args: Parameters<typeof check>[1], expected: 'allow' | number, change: () => Promise<unknown>, committed: () => Promise<boolean>): Promise<number> {
    const changing = change();
    while (!(await committed())) await sleep(5);
    const commit = performance.now();
    await eventually('every worker to answer ' + String(expected), () => everyWorker(args), (answers) => answers.every((answer) => answer === expected), 10_000);
    const agreed = performance.now();
    await changing;
    return agreed - commit;
  }

  before(async () => {
    database = await freshDatabase();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    issuer = await startTestIssuer({ clients: [PARTNER, STRANGER] });
    await cli('site', 'add', '1001');
    await cli('ip', 'allow', '1001', '203.0.113.0/24');
    key = (JSON.parse(await cli('key', 'issue', '1001', '--json')) as { apiKey: string }).apiKey;
    service = await startService({
      DATABASE_URL: database.url,
      MIGRATE_ON_START: 'false',
      WORKERS: String(WORKERS),
      STRIP_AUTHORIZATION: 'true',
      TOKEN_ISSUER: issuer.issuer,
      TOKEN_AUDIENCE: issuer.audience,
      TOKEN_JWKS_URL: issuer.jwksUrl,
    });
    clients = Array.from({ length: CONNECTIONS }, () => authorizationClient(service.grpcTarget, { 'grpc.use_local_subchannel_pool': 1 }));
  });

  after(async () => {
    for (const client of clients) client.close();
    await service?.stop();
    await issuer?.close();
    await sql?.end();
    await database?.drop();
  });

  it('moves a site from keys to both to tokens only, refusing none of its requests on the way', async () => {
    assert.deepEqual(await everyWorker(keyRequest()), Array(CONNECTIONS).fill('allow'));
    const early = await issuer.mintAccessToken(PARTNER);
    assert.deepEqual(await everyWorker(bearer(early)), Array(CONNECTIONS).fill(107), 'an unregistered client is refused');

    await cli('token-client', 'add', '1001', PARTNER.clientId, '--note', 'Acme production');
    const token = await issuer.mintAccessToken(PARTNER);
    await eventually('every worker to accept the token', () => everyWorker(bearer(token)), (answers) => answers.every((answer) => answer === 'allow'), 10_000);
    assert.deepEqual(await everyWorker(keyRequest()), Array(CONNECTIONS).fill('allow'), 'on both, keys still work');

    // The partner sends tokens only from here on; the switch to tokens must not refuse one of them.
    let switching = true;
    const refused: Array<'allow' | number> = [];
    const partner = (async () => {
      while (switching) for (const answer of await everyWorker(bearer(token, { siteid: 1001 }))) if (answer !== 'allow') refused.push(answer);
    })();
    await cli('site', 'auth', '1001', 'tokens');
    await eventually('every worker to refuse the key with 105', () => everyWorker(keyRequest()), (answers) => answers.every((answer) => answer === 105), 10_000);
    switching = false;
    await partner;
    assert.deepEqual(refused, []);

    const response = await check(clients[0]!, keyRequest());
    assert.equal(response.denied_response?.body, '{"error":{"id":105,"message":"API key authentication is switched off for site 1001; use token-based authentication"}}');
    await cli('site', 'auth', '1001', 'both');
    await eventually('every worker to accept the key again', () => everyWorker(keyRequest()), (answers) => answers.every((answer) => answer === 'allow'), 10_000);
  });

  it('allows a token with x-site-id, the method and client as metadata, no sunset headers, and Authorization removed', async () => {
    const response = await check(clients[0]!, bearer(await issuer.mintAccessToken(PARTNER)));
    assert.equal(verdict(response), 'allow');
    assert.equal(headerValue(response, 'x-site-id', 'ok'), '1001');
    const ok = response.ok_response as { headers_to_remove?: string[]; response_headers_to_add?: unknown[] } | undefined;
    assert.deepEqual(ok?.headers_to_remove, ['authorization']);
    assert.deepEqual(ok?.response_headers_to_add, []);
    const fields = response.dynamic_metadata?.fields ?? {};
    assert.deepEqual(
      Object.fromEntries(Object.entries(fields).map(([name, value]) => [name, value.stringValue ?? value.string_value])),
      { site_id: '1001', auth_method: 'token', client_id: PARTNER.clientId },
    );
    const keyed = await check(clients[0]!, keyRequest());
    assert.ok((keyed.ok_response as { response_headers_to_add?: Array<{ header?: { key?: string } }> } | undefined)?.response_headers_to_add?.some((option) => option.header?.key === 'deprecation'), 'keys keep their Deprecation header');
  });

  it('refuses a forged token with 106, 401 and the Bearer challenge, and one with its signature stripped', async () => {
    const forger = await signingKey(issuer.signingKid);
    const now = Math.floor(Date.now() / 1000);
    const forged = await signedToken(forger, { iss: issuer.issuer, aud: issuer.audience, client_id: PARTNER.clientId, sub: PARTNER.clientId, iat: now, exp: now + 300 });
    const response = await check(clients[0]!, bearer(forged));
    assert.equal(verdict(response), 106);
    assert.equal(response.denied_response?.status?.code, 'Unauthorized');
    assert.equal(headerValue(response, 'www-authenticate'), 'Bearer error="invalid_token", error_description="the token signature does not verify"');
    assert.equal(response.denied_response?.body, '{"error":{"id":106,"message":"Access token is invalid: the token signature does not verify"}}');
    const [header, payload] = (await issuer.mintAccessToken(PARTNER)).split('.');
    assert.equal(verdict(await check(clients[0]!, bearer(`${header}.${payload}.`))), 106, 'a signature stripped');
    assert.equal(verdict(await check(clients[0]!, bearer(`${header}.${payload}`))), 106, 'not three parts');
  });

  it('refuses a registered client from outside the allowlist (103) and a body naming another site (104)', async () => {
    const token = await issuer.mintAccessToken(PARTNER);
    assert.equal(verdict(await check(clients[0]!, { ...bearer(token), ip: '198.51.100.9' })), 103);
    assert.equal(verdict(await check(clients[0]!, bearer(token, { siteid: 1002 }))), 104);
  });

  it("accepts tokens signed with the issuer's next key once it rotates", async () => {
    const { kid } = await issuer.rotateSigningKey();
    const token = await issuer.mintAccessToken(PARTNER);
    assert.equal(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid, kid);
    // Each worker fetches the JWKS again when a token names a kid it lacks, at most every few seconds.
    await eventually('every worker to accept the rotated key', () => everyWorker(bearer(token)), (answers) => answers.every((answer) => answer === 'allow'), 15_000);
  });

  it('refuses the tokens of a removed client (107) on every worker within a second, even kept ones', async () => {
    const token = await issuer.mintAccessToken(PARTNER);
    await eventually('the token to be accepted', () => everyWorker(bearer(token)), (answers) => answers.every((answer) => answer === 'allow'), 10_000);
    const took = await fromCommit(
      bearer(token),
      107,
      () => cli('token-client', 'remove', PARTNER.clientId),
      async () => (await sql.query('SELECT 1 FROM token_clients WHERE client_id = $1', [PARTNER.clientId])).rowCount === 0,
    );
    assert.ok(took < PROPAGATION_BOUND_MS, `removal took ${Math.round(took)} ms`);
    await cli('token-client', 'add', '1001', PARTNER.clientId);
  });

  it('refuses a token from before a client was removed once the client is added to another site (106, revoked); new ones work there', async () => {
    await cli('site', 'add', '1002');
    await cli('ip', 'allow', '1002', '203.0.113.0/24');
    const old = await issuer.mintAccessToken(PARTNER);
    await eventually('the token to be accepted', () => everyWorker(bearer(old)), (answers) => answers.every((answer) => answer === 'allow'), 10_000);
    await cli('token-client', 'remove', PARTNER.clientId);
    // iat has whole seconds, and a token of the second of the registration counts: the move comes a second later.
    const issuedAt = (JSON.parse(Buffer.from(old.split('.')[1]!, 'base64url').toString()) as { iat: number }).iat;
    await eventually('the second after the token was issued', async () => Math.floor(Date.now() / 1000), (second) => second > issuedAt, 3_000);
    await cli('token-client', 'add', '1002', PARTNER.clientId);
    await eventually('every worker to refuse the old token as revoked', () => everyWorker(bearer(old)), (answers) => answers.every((answer) => answer === 106), 10_000);
    const refusal = await check(clients[0]!, bearer(old));
    assert.match(refusal.denied_response?.body ?? '', /issued before the site's tokens were revoked; request a new one/);
    const fresh = await check(clients[0]!, bearer(await issuer.mintAccessToken(PARTNER)));
    assert.equal(verdict(fresh), 'allow');
    assert.equal(headerValue(fresh, 'x-site-id', 'ok'), '1002');
    await cli('token-client', 'remove', PARTNER.clientId);
    await cli('token-client', 'add', '1001', PARTNER.clientId);
  });

  it("refuses a site's tokens issued before revoke-tokens (106) on every worker within a second; new ones work", async () => {
    const token = await issuer.mintAccessToken(PARTNER);
    await eventually('the token to be accepted', () => everyWorker(bearer(token)), (answers) => answers.every((answer) => answer === 'allow'), 10_000);
    const took = await fromCommit(
      bearer(token),
      106,
      () => cli('site', 'revoke-tokens', '1001'),
      async () => (await sql.query('SELECT 1 FROM sites WHERE id = 1001 AND tokens_not_before IS NOT NULL')).rowCount === 1,
    );
    assert.ok(took < PROPAGATION_BOUND_MS, `revocation took ${Math.round(took)} ms`);
    const refusal = await check(clients[0]!, bearer(token));
    assert.match(refusal.denied_response?.body ?? '', /issued before the site's tokens were revoked/);
    // iat has whole seconds: a token minted in the second of the revocation counts as before it.
    await eventually('a token minted after the revocation to be accepted', async () => everyWorker(bearer(await issuer.mintAccessToken(PARTNER))), (answers) => answers.every((answer) => answer === 'allow'), 10_000);
  });

  it('counts checks by method and token refusals by reason, summed over the workers', async () => {
    const exposition = await metrics();
    const byMethod = samples(exposition, 'sitekey_authz_checks_by_method_total');
    assert.ok((byMethod.get('{method="token",outcome="allowed"}') ?? 0) > 0, [...byMethod].join(' '));
    assert.ok((byMethod.get('{method="api_key",outcome="allowed"}') ?? 0) > 0);
    const refusals = samples(exposition, 'sitekey_authz_token_refusals_total');
    assert.ok((refusals.get('{reason="signature"}') ?? 0) >= 1);
    assert.ok((refusals.get('{reason="unregistered-client"}') ?? 0) >= CONNECTIONS);
    assert.ok((refusals.get('{reason="revoked"}') ?? 0) >= 1);
    assert.ok((samples(exposition, 'sitekey_authz_token_requests_total').get('{site="1001"}') ?? 0) > 0);
  });

  it('check sends a Bearer request as Envoy would and prints the allow with the token\'s client', async () => {
    const token = await issuer.mintAccessToken(PARTNER);
    const result = await runCli(database.url, ['check', '--target', service.grpcTarget, '--authorization', `Bearer ${token}`, '--ip', '203.0.113.7']);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /dynamic metadata  auth_method = token/);
    assert.match(result.stdout, new RegExp(`dynamic metadata  client_id = ${PARTNER.clientId}`));
    assert.ok(!result.stdout.includes(token), 'the token is not printed back');
  });

  it('explain gives the service\'s answer for a token, with the rule', async () => {
    const env = { TOKEN_ISSUER: issuer.issuer, TOKEN_AUDIENCE: issuer.audience, TOKEN_JWKS_URL: issuer.jwksUrl };
    const token = await issuer.mintAccessToken(PARTNER);
    const allowed = await runCli(database.url, ['explain', '--authorization', `Bearer ${token}`, '--ip', '203.0.113.7', '--json'], undefined, env);
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.deepEqual(
      (({ allowed: ok, siteId, authMethod, clientId }) => ({ ok, siteId, authMethod, clientId }))(JSON.parse(allowed.stdout) as Record<string, unknown>),
      { ok: true, siteId: '1001', authMethod: 'token', clientId: PARTNER.clientId },
    );
    const stranger = await runCli(database.url, ['explain', '--authorization', `Bearer ${await issuer.mintAccessToken(STRANGER)}`, '--ip', '203.0.113.7'], undefined, env);
    assert.equal(stranger.code, 1);
    assert.match(stranger.stdout, /token client partner-9999 is registered to no site/);
    const off = await runCli(database.url, ['explain', '--authorization', `Bearer ${token}`, '--ip', '203.0.113.7', '--json']);
    assert.equal(off.code, 1);
    assert.equal((JSON.parse(off.stdout) as { rule: string }).rule, 'tokens-disabled');
  });
});
