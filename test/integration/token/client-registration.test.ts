import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import pg from 'pg';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { authorizationClient, check, verdict } from '../../support/envoy-client.js';
import { eventually } from '../../support/eventually.js';
import { startTestIssuer, TokenRequestRefused, type TestIssuer, type TestIssuerRegistration } from '../../support/oidc-issuer.js';
import { runCli, startService, type CliResult, type RunningService } from '../../support/service.js';

interface Handover {
  client_id: string;
  client_secret?: string;
  token_endpoint: string;
  resource: string;
  guide_url: string | null;
}

const GUIDE = 'https://partners.example.com/token-guide';

/**
 * `token-client create`, `rotate-secret` and `remove` against a real oidc-provider speaking RFC 7591
 * and RFC 7592, standing in for the organisation's issuer; a real `serve` checks the tokens the
 * printed credentials get at its token endpoint.
 */
describe('partner clients created, rotated and removed at the issuer through dynamic registration', () => {
  let database: TestDatabase;
  let issuer: TestIssuer;
  let registration: TestIssuerRegistration;
  let service: RunningService;
  let sql: pg.Client;
  let client: ReturnType<typeof authorizationClient>;
  let scratch: string;
  const outputs: CliResult[] = [];

  const tokenEnv = (): Record<string, string> => ({ TOKEN_ISSUER: issuer.issuer, TOKEN_AUDIENCE: issuer.audience, TOKEN_JWKS_URL: issuer.jwksUrl });
  const cli = async (args: string[], env: Record<string, string> = {}): Promise<CliResult> => {
    // Logged at the most verbose level, so that a token written anywhere in a log line would be seen.
    const result = await runCli(database.url, args, undefined, { ...tokenEnv(), TOKEN_REGISTRATION_TOKEN: registration.initialAccessToken, LOG_LEVEL: 'trace', ...env });
    outputs.push(result);
    return result;
  };
  const ok = async (...args: string[]): Promise<string> => {
    const result = await cli(args);
    assert.equal(result.code, 0, result.stderr);
    return result.stdout;
  };
  /** Exit 1: refused by the store or the issuer; 2: a usage error, refused before anything was asked. */
  const refused = async (args: string[], message: RegExp, env: Record<string, string> = {}, code = 1): Promise<void> => {
    const result = await cli(args, env);
    assert.equal(result.code, code, `${args.join(' ')}: ${result.stdout}${result.stderr}`);
    assert.match(result.stderr, message);
  };
  const rows = async (clientId: string) => (await sql.query('SELECT * FROM token_clients WHERE client_id = $1', [clientId])).rows;
  const allowedCheck = async (token: string) => verdict(await check(client, { authorization: `Bearer ${token}` }));

  /** RFC 7523 client authentication: an assertion signed with the partner's key, for the issuer. */
  async function tokenWithAssertion(clientId: string, key: CryptoKey): Promise<string> {
    const assertion = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(issuer.issuer)
      .setJti(randomUUID())
      .setIssuedAt()
      .setExpirationTime('1m')
      .sign(key);
    const response = await fetch(issuer.tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        resource: issuer.audience,
        client_id: clientId,
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: assertion,
      }),
    });
    const answer = (await response.json()) as { access_token?: string; error?: string; error_description?: string };
    if (answer.access_token === undefined) throw new TokenRequestRefused(response.status, String(answer.error), String(answer.error_description));
    return answer.access_token;
  }

  before(async () => {
    database = await freshDatabase();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    scratch = await mkdtemp(join(tmpdir(), 'registration-'));
    issuer = await startTestIssuer({ clients: [], registration: true });
    registration = issuer.registration as TestIssuerRegistration;
    await ok('site', 'add', '1001');
    await ok('ip', 'allow', '1001', '203.0.113.0/24');
    await ok('sunset', 'set', '--guide', GUIDE);
    // serve verifies tokens; it registers nothing, so it is not given the initial access token.
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', ...tokenEnv() });
    client = authorizationClient(service.grpcTarget);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await issuer?.close();
    await sql?.end();
    await database?.drop();
    if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
  });

  let secretClient: Handover;

  it('creates a client with a secret whose printed credentials get a token that is allowed', async () => {
    secretClient = JSON.parse(await ok('token-client', 'create', '1001', '--note', 'Acme production', '--json', '--actor', 'am@example.com')) as Handover;
    assert.deepEqual(Object.keys(secretClient), ['client_id', 'client_secret', 'token_endpoint', 'resource', 'guide_url']);
    assert.equal(secretClient.token_endpoint, issuer.tokenEndpoint);
    assert.equal(secretClient.resource, issuer.audience);
    assert.equal(secretClient.guide_url, GUIDE);
    assert.ok(registration.events.includes(`create ${secretClient.client_id}`));
    const token = await issuer.mintAccessToken({ clientId: secretClient.client_id, clientSecret: secretClient.client_secret ?? '' }, { resource: secretClient.resource });
    await eventually('the new client to be allowed', () => allowedCheck(token), (answer) => answer === 'allow', 5_000);
    const [row] = await rows(secretClient.client_id);
    assert.equal(row.auth_method, 'client_secret_basic');
    assert.equal(row.site_id, '1001');
    const audit = await sql.query("SELECT actor, details FROM audit_log WHERE action = 'token-client.create'");
    assert.deepEqual(audit.rows, [{ actor: 'am@example.com', details: { clientId: secretClient.client_id, note: 'Acme production', authMethod: 'client_secret_basic' } }]);
  });

  it("prints the hand-over for people, with the secret once and the words to send it", async () => {
    const text = await ok('token-client', 'create', '1001');
    assert.match(text, /^created token client \S+ at the issuer for site 1001; it authenticates with the secret below/);
    for (const name of ['client_id', 'client_secret', 'token_endpoint', 'resource', 'guide_url']) assert.match(text, new RegExp(`^  ${name} +\\S+`, 'm'));
    assert.match(text, /shown only now/);
  });

  let keyClient: Handover;
  let partnerKey: CryptoKey;

  it("creates a client for the partner's public key (private_key_jwt) that has no secret, and its assertions get an allowed token", async () => {
    const pair = await generateKeyPair('ES256');
    partnerKey = pair.privateKey;
    const jwksFile = join(scratch, 'partner.jwks.json');
    await writeFile(jwksFile, JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), use: 'sig', alg: 'ES256' }] }));
    keyClient = JSON.parse(await ok('token-client', 'create', '1001', '--jwks-file', jwksFile, '--json')) as Handover;
    assert.deepEqual(Object.keys(keyClient), ['client_id', 'token_endpoint', 'resource', 'guide_url']);
    const token = await tokenWithAssertion(keyClient.client_id, partnerKey);
    await eventually('the key client to be allowed', () => allowedCheck(token), (answer) => answer === 'allow', 5_000);
    assert.equal((await rows(keyClient.client_id))[0].auth_method, 'private_key_jwt');
  });

  it("refuses a key set with a private key, a non-https key URL and both kinds of key material, before asking the issuer", async () => {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const privateFile = join(scratch, 'private.jwks.json');
    await writeFile(privateFile, JSON.stringify({ keys: [await exportJWK(privateKey)] }));
    const before = registration.events.length;
    await refused(['token-client', 'create', '1001', '--jwks-file', privateFile], /--jwks-file: key 1 is private \(it has "d"\): ask the partner for their public keys only/, {}, 2);
    await refused(['token-client', 'create', '1001', '--jwks-uri', 'http://partner.example/jwks.json'], /is not the URL of the partner's key set: expected https:\/\//, {}, 2);
    await refused(['token-client', 'create', '1001', '--jwks-file', privateFile, '--jwks-uri', 'https://partner.example/jwks.json'], /--jwks-file FILE or --jwks-uri URL, not both/, {}, 2);
    assert.equal(registration.events.length, before, 'nothing reached the issuer');
  });

  it('rotates the secret: the old one is refused at the token endpoint, the new one gets a token', async () => {
    const rotated = JSON.parse(await ok('token-client', 'rotate-secret', '--json', '--', secretClient.client_id)) as Handover;
    assert.deepEqual(Object.keys(rotated), ['client_id', 'client_secret', 'token_endpoint', 'resource', 'guide_url']);
    assert.notEqual(rotated.client_secret, secretClient.client_secret);
    await assert.rejects(issuer.mintAccessToken({ clientId: secretClient.client_id, clientSecret: secretClient.client_secret ?? '' }), (error: TokenRequestRefused) => error.error === 'invalid_client');
    const token = await issuer.mintAccessToken({ clientId: rotated.client_id, clientSecret: rotated.client_secret ?? '' });
    assert.equal(await allowedCheck(token), 'allow');
    const audit = await sql.query("SELECT details FROM audit_log WHERE action = 'token-client.rotate-secret'");
    assert.deepEqual(audit.rows, [{ details: { clientId: secretClient.client_id, authMethod: 'client_secret_basic' } }]);
    // The issuer rotated the registration access token on the update: the stored one is the new one, so a second rotation works.
    const again = JSON.parse(await ok('token-client', 'rotate-secret', '--json', '--', secretClient.client_id)) as Handover;
    secretClient = again;
  });

  it('refuses to rotate a client with no secret, one added by hand, and one sealed with another initial access token', async () => {
    await refused(['token-client', 'rotate-secret', '--', keyClient.client_id], /authenticates with the partner's own keys \(private_key_jwt\): it has no secret to rotate/);
    await ok('token-client', 'add', '1001', 'existing-client-1001');
    await refused(['token-client', 'rotate-secret', 'existing-client-1001'], /was not created by this service .*: manage it at the issuer/);
    await refused(['token-client', 'rotate-secret', '--', secretClient.client_id], /sealed with another TOKEN_REGISTRATION_TOKEN .*: set TOKEN_REGISTRATION_TOKEN back/, {
      TOKEN_REGISTRATION_TOKEN: 'another-initial-access-token',
    });
  });

  it('says what to set when registration is off, and that token-client add exists', async () => {
    const result = await runCli(database.url, ['token-client', 'create', '1001'], undefined, tokenEnv());
    assert.equal(result.code, 1);
    assert.match(result.stderr, /registering clients at the issuer is off: set TOKEN_REGISTRATION_TOKEN \(or TOKEN_REGISTRATION_TOKEN_FILE\).*`sitekey-authz token-client add <site-id> <client-id>`/);
  });

  it('leaves nothing behind when the issuer refuses: a wrong initial access token', async () => {
    const before = (await sql.query('SELECT count(*)::int AS n FROM token_clients')).rows[0].n as number;
    await refused(['token-client', 'create', '1001'], /the issuer refused to register the client: HTTP 401 invalid_token.*check TOKEN_REGISTRATION_TOKEN.*; nothing was stored/, {
      TOKEN_REGISTRATION_TOKEN: 'not-the-initial-access-token',
    });
    assert.equal((await sql.query('SELECT count(*)::int AS n FROM token_clients')).rows[0].n, before);
  });

  it('deletes the client at the issuer again when the database refuses it: no such site', async () => {
    const result = await cli(['token-client', 'create', '9999']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /site 9999 does not exist.*; the client (\S+) registered at the issuer was deleted again/);
    const clientId = /the client (\S+) registered at the issuer/.exec(result.stderr)?.[1] ?? '';
    assert.deepEqual(registration.events.filter((event) => event.endsWith(` ${clientId}`)), [`create ${clientId}`, `delete ${clientId}`]);
    assert.equal(await registration.has(clientId), false);
    assert.deepEqual(await rows(clientId), []);
  });

  it('removes a client at the issuer and here: the token endpoint refuses it, and its earlier token gets 107 within a second', async () => {
    const earlier = await tokenWithAssertion(keyClient.client_id, partnerKey);
    assert.equal(await allowedCheck(earlier), 'allow');
    const removing = cli(['token-client', 'remove', '--', keyClient.client_id]);
    const removed = await removing;
    assert.equal(removed.code, 0, removed.stderr);
    const done = performance.now();
    assert.match(removed.stdout, /removed token client \S+ of site 1001 and deleted it at the issuer/);
    await eventually('the earlier token to be refused', () => allowedCheck(earlier), (answer) => answer === 107, 5_000);
    assert.ok(performance.now() - done < 1_000, 'refused within a second of the removal');
    await assert.rejects(tokenWithAssertion(keyClient.client_id, partnerKey), (error: TokenRequestRefused) => error.error === 'invalid_client');
    const audit = await sql.query("SELECT details FROM audit_log WHERE action = 'token-client.remove' AND details->>'clientId' = $1", [keyClient.client_id]);
    assert.deepEqual(audit.rows, [{ details: { clientId: keyClient.client_id, authMethod: 'private_key_jwt', deletedAtIssuer: true } }]);
  });

  it('never shows, logs or audits a registration access token, and stores it only sealed', async () => {
    assert.ok(registration.accessTokens.length >= 4, 'the issuer handed out registration access tokens');
    const stored = await sql.query<{ sealed: Buffer | null; uri: string | null }>('SELECT registration_token_sealed AS sealed, registration_client_uri AS uri FROM token_clients');
    const audit = JSON.stringify((await sql.query('SELECT * FROM audit_log')).rows);
    const printed = outputs.map((output) => output.stdout + output.stderr).join('\n') + service.output();
    for (const token of registration.accessTokens) {
      for (const row of stored.rows) assert.equal(row.sealed?.includes(Buffer.from(token)) ?? false, false, 'the stored token is sealed');
      assert.equal(audit.includes(token), false, 'no audit row holds it');
      assert.equal(printed.includes(token), false, 'no output or log line holds it');
    }
    assert.ok(printed.includes('"level"'), 'log lines were captured');
    assert.equal(audit.includes(registration.initialAccessToken), false);
    assert.equal(printed.includes(registration.initialAccessToken), false);
  });

  it('keeps a client whose issuer cannot be reached, saying so; --local-only removes it here only', async () => {
    await issuer.close();
    await refused(['token-client', 'remove', '--', secretClient.client_id], /the issuer gave no usable answer to delete client \S+: .*the client was not removed, here or there\. To remove it here only \(then delete it at the issuer by hand\): remove this one here only: `sitekey-authz token-client remove \S+ --local-only`/);
    assert.equal((await rows(secretClient.client_id)).length, 1);
    assert.match(await ok('token-client', 'remove', '--local-only', '--', secretClient.client_id), /removed token client \S+ of site 1001; it still exists at the issuer: delete it there/);
    assert.deepEqual(await rows(secretClient.client_id), []);
  });
});
