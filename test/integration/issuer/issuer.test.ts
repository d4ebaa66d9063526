import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import { startIssuer, type RunningIssuer } from '../../../src/issuer/issuer.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { clientAssertion, partnerKey, requestToken, send, sendJson, type HttpAnswer } from '../../support/issuer-client.js';

/**
 * `sitekey-authz issuer` against a real PostgreSQL, over real HTTP: discovery, registration with the
 * initial access token (RFC 7591) and management (RFC 7592), both ways of client authentication, and
 * RFC 9068 JWT access tokens for the one resource, checked by an independent verifier (jose).
 */
const RESOURCE = 'https://partner-api.test';
const REGISTRATION_TOKEN = 'initial-access-token-for-the-tests-0123456789';

async function verified(issuer: RunningIssuer, token: string): Promise<JWTPayload> {
  const { payload } = await jwtVerify(token, createRemoteJWKSet(new URL(issuer.jwksUrl)), {
    issuer: issuer.url,
    audience: RESOURCE,
    typ: 'at+jwt',
    algorithms: ['RS256'],
    requiredClaims: ['exp', 'iat', 'jti', 'client_id'],
  });
  return payload;
}

function accessToken(answer: HttpAnswer): string {
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(typeof answer.body.access_token, 'string');
  return answer.body.access_token as string;
}

describe('sitekey-authz issuer', () => {
  let database: TestDatabase;
  let issuer: RunningIssuer;

  before(async () => {
    database = await freshDatabase();
    issuer = await startIssuer({ databaseUrl: database.url, port: 0, resource: RESOURCE, registrationToken: REGISTRATION_TOKEN });
  });

  after(async () => {
    await issuer?.close();
    await database?.drop();
  });

  const register = (metadata: object, token: string | null = REGISTRATION_TOKEN) => sendJson(issuer.registrationEndpoint, 'POST', token ?? undefined, metadata);

  it('publishes the same metadata at both discovery paths, naming what it supports and nothing more', async () => {
    const openid = await send(issuer.discoveryUrl);
    const oauth = await send(`${issuer.url}/.well-known/oauth-authorization-server`);
    assert.equal(openid.status, 200);
    assert.deepEqual(oauth.body, openid.body);
    assert.equal(oauth.body.issuer, issuer.url);
    assert.equal(oauth.body.token_endpoint, issuer.tokenEndpoint);
    assert.equal(oauth.body.registration_endpoint, issuer.registrationEndpoint);
    assert.equal(oauth.body.jwks_uri, issuer.jwksUrl);
    assert.deepEqual(oauth.body.grant_types_supported, ['client_credentials']);
    assert.deepEqual(oauth.body.response_types_supported, []);
    assert.deepEqual([...(oauth.body.token_endpoint_auth_methods_supported as string[])].sort(), ['client_secret_basic', 'private_key_jwt']);
  });

  it('writes its own URLs from the issuer identifier, whatever Host or forwarded headers a request names', async () => {
    const spoofed = await send(issuer.discoveryUrl, { headers: { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' } });
    assert.equal(spoofed.status, 200);
    assert.equal(spoofed.body.token_endpoint, issuer.tokenEndpoint);
    assert.equal(spoofed.body.jwks_uri, issuer.jwksUrl);
  });

  it('behind a gateway that ends TLS, names its https URLs and takes assertions for its https identifier', async () => {
    const behindGateway = await startIssuer({ databaseUrl: database.url, port: 0, issuerUrl: 'https://auth.partner-api.test', resource: RESOURCE, registrationToken: REGISTRATION_TOKEN });
    try {
      // What the gateway forwards to: plain http on the pod's port.
      const pod = `http://127.0.0.1:${behindGateway.port}`;
      const discovery = await send(`${pod}/.well-known/oauth-authorization-server`);
      assert.equal(discovery.body.issuer, 'https://auth.partner-api.test');
      assert.equal(discovery.body.token_endpoint, 'https://auth.partner-api.test/token');
      const key = await partnerKey();
      const registered = await sendJson(`${pod}/reg`, 'POST', REGISTRATION_TOKEN, { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [key.publicJwk] } });
      assert.equal(registered.status, 201, JSON.stringify(registered.body));
      assert.match(String(registered.body.registration_client_uri), /^https:\/\/auth\.partner-api\.test\/reg\//);
      const clientId = registered.body.client_id as string;
      const answer = await requestToken(`${pod}/token`, { assertion: await clientAssertion(key, clientId, 'https://auth.partner-api.test') });
      const token = accessToken(answer);
      const claims = await jwtVerify(token, createRemoteJWKSet(new URL(`${pod}/jwks`)), { issuer: 'https://auth.partner-api.test', audience: RESOURCE, typ: 'at+jwt' });
      assert.equal(claims.payload.client_id, clientId);
    } finally {
      await behindGateway.close();
    }
  });

  it('answers /healthz for probes', async () => {
    const health = await send(`${issuer.url}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: 'ok' });
  });

  it('registers a client_secret_basic client for the initial access token, whose token is an RFC 9068 JWT for the resource', async () => {
    const registered = await register({ client_name: 'Acme Travel' });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    assert.equal(registered.body.token_endpoint_auth_method, 'client_secret_basic');
    assert.deepEqual(registered.body.grant_types, ['client_credentials']);
    const clientId = registered.body.client_id as string;
    const clientSecret = registered.body.client_secret as string;
    assert.ok(clientSecret.length >= 40);

    const token = accessToken(await requestToken(issuer.tokenEndpoint, { basic: { clientId, clientSecret }, resource: RESOURCE }));
    assert.equal(decodeProtectedHeader(token).typ, 'at+jwt');
    assert.equal(decodeProtectedHeader(token).kid, issuer.signingKid);
    const claims = await verified(issuer, token);
    assert.equal(claims.client_id, clientId);
    assert.equal(claims.aud, RESOURCE);
    assert.equal((claims.exp as number) - (claims.iat as number), 600);
  });

  it('gives a JWT for the one resource to a request that names no resource, refuses another resource, and grants no scope', async () => {
    const registered = await register({});
    const basic = { clientId: registered.body.client_id as string, clientSecret: registered.body.client_secret as string };
    const claims = await verified(issuer, accessToken(await requestToken(issuer.tokenEndpoint, { basic })));
    assert.equal(claims.aud, RESOURCE);
    const other = await requestToken(issuer.tokenEndpoint, { basic, resource: 'https://other-api.test' });
    assert.equal(other.status, 400);
    assert.equal(other.body.error, 'invalid_target');
    const scoped = await verified(issuer, accessToken(await requestToken(issuer.tokenEndpoint, { basic, scope: 'orders:write' })));
    assert.equal(scoped.scope, undefined, 'a scope asked for is left out: the tokens carry none');
  });

  it('refuses registration without the initial access token, or with a wrong one', async () => {
    const without = await register({}, null);
    const wrong = await register({}, `${REGISTRATION_TOKEN}x`);
    for (const answer of [without, wrong]) {
      assert.equal(answer.status, 401, JSON.stringify(answer.body));
      assert.equal(answer.body.client_id, undefined);
    }
  });

  it('refuses to register what it does not support: another grant type, a response type, another auth method', async () => {
    for (const metadata of [
      { grant_types: ['authorization_code'], redirect_uris: ['https://partner.test/cb'], response_types: ['code'] },
      { grant_types: ['refresh_token'] },
      { token_endpoint_auth_method: 'client_secret_post' },
      { token_endpoint_auth_method: 'none' },
    ]) {
      const answer = await register(metadata);
      assert.equal(answer.status, 400, `${JSON.stringify(metadata)} got ${answer.status} ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.error, 'invalid_client_metadata');
    }
  });

  it('registers a private_key_jwt client with no secret at all; its assertion (aud = the issuer) gets a token, a forged one does not', async () => {
    const key = await partnerKey();
    const registered = await register({ token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [key.publicJwk] } });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    assert.equal(registered.body.client_secret, undefined);
    const clientId = registered.body.client_id as string;

    const claims = await verified(issuer, accessToken(await requestToken(issuer.tokenEndpoint, { assertion: await clientAssertion(key, clientId, issuer.url), resource: RESOURCE })));
    assert.equal(claims.client_id, clientId);

    const forged = await requestToken(issuer.tokenEndpoint, { assertion: await clientAssertion(await partnerKey(), clientId, issuer.url) });
    assert.equal(forged.status, 401);
    assert.equal(forged.body.error, 'invalid_client');
    const basicAttempt = await requestToken(issuer.tokenEndpoint, { basic: { clientId, clientSecret: 'anything' } });
    assert.equal(basicAttempt.status, 401);
  });

  it('reads, rotates the secret of, and deletes a client with its registration access token (RFC 7592)', async () => {
    const registered = await register({ client_name: 'Rotating partner' });
    const clientId = registered.body.client_id as string;
    const oldSecret = registered.body.client_secret as string;
    const clientUri = registered.body.registration_client_uri as string;
    let managementToken = registered.body.registration_access_token as string;

    const read = await sendJson(clientUri, 'GET', managementToken);
    assert.equal(read.status, 200);
    assert.equal(read.body.client_id, clientId);
    assert.equal((await sendJson(clientUri, 'GET', 'not-the-token')).status, 401);

    assert.equal(read.body.client_secret, undefined, 'a read answers no secret: the issuer keeps only its digest');

    // A PUT that names a secret is told to leave it out: the issuer cannot compare it with a digest.
    const named = await sendJson(clientUri, 'PUT', managementToken, { client_id: clientId, client_secret: oldSecret, client_name: 'Renamed partner' });
    assert.equal(named.status, 400, JSON.stringify(named.body));
    assert.match(String(named.body.error_description), /leave client_secret out/);
    accessToken(await requestToken(issuer.tokenEndpoint, { basic: { clientId, clientSecret: oldSecret } }));

    // One that leaves it out (RFC 7592 §2.2: omitted is null) gets a new secret.
    const rotated = await sendJson(clientUri, 'PUT', managementToken, { client_id: clientId, client_name: 'Renamed partner' });
    assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
    const newSecret = rotated.body.client_secret as string;
    assert.ok(typeof newSecret === 'string' && newSecret !== oldSecret);
    assert.notEqual(rotated.body.registration_access_token, managementToken, 'the registration access token rotates with each update');
    managementToken = rotated.body.registration_access_token as string;

    const withOld = await requestToken(issuer.tokenEndpoint, { basic: { clientId, clientSecret: oldSecret } });
    assert.equal(withOld.status, 401);
    assert.equal(withOld.body.error, 'invalid_client');
    accessToken(await requestToken(issuer.tokenEndpoint, { basic: { clientId, clientSecret: newSecret } }));

    const deleted = await sendJson(clientUri, 'DELETE', managementToken);
    assert.equal(deleted.status, 204);
    const afterDelete = await requestToken(issuer.tokenEndpoint, { basic: { clientId, clientSecret: newSecret } });
    assert.equal(afterDelete.status, 401);
    assert.equal((await sendJson(clientUri, 'GET', managementToken)).status, 401);
  });

  it('keeps a client secret only as its SHA-256: the table holds none a client could present, and the digest itself is refused', async () => {
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const registered = await register({});
      const clientId = registered.body.client_id as string;
      const secret = registered.body.client_secret as string;
      const { rows } = await client.query<{ payload: { client_secret?: string } }>("SELECT payload FROM issuer_oidc_objects WHERE model = 'Client' AND id = $1", [clientId]);
      const stored = rows[0]?.payload.client_secret ?? '';
      assert.ok(stored !== '' && !stored.includes(secret), 'the stored secret is not the secret');
      const asStored = await requestToken(issuer.tokenEndpoint, { basic: { clientId, clientSecret: stored } });
      assert.equal(asStored.status, 401, 'the digest is no secret');
      accessToken(await requestToken(issuer.tokenEndpoint, { basic: { clientId, clientSecret: secret } }));
    } finally {
      await client.end();
    }
  });

  it('keeps a registration access token only as its SHA-256, never its value', async () => {
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const registered = await register({});
      const token = registered.body.registration_access_token as string;
      const { rows } = await client.query<{ found: number }>("SELECT count(*)::int AS found FROM issuer_oidc_objects WHERE id = $1 OR payload::text LIKE '%' || $1 || '%'", [token]);
      assert.equal(rows[0]?.found, 0);
      const stored = await client.query("SELECT count(*)::int AS found FROM issuer_oidc_objects WHERE model = 'RegistrationAccessToken'");
      assert.ok((stored.rows[0] as { found: number }).found > 0);
    } finally {
      await client.end();
    }
  });
});
