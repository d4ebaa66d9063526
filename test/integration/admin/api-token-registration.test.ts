import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair } from 'jose';
import pg from 'pg';
import { startAdminIssuer, type AdminIssuer, type AdminPersonName } from '../../support/admin-issuer.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { authorizationClient, check, verdict } from '../../support/envoy-client.js';
import { eventually } from '../../support/eventually.js';
import { startTestIssuer, TokenRequestRefused, type TestIssuer, type TestIssuerRegistration } from '../../support/oidc-issuer.js';
import { runCli, startService, type RunningService } from '../../support/service.js';

const MANAGER = 'manager@example.test (sub 248289761002)';

/**
 * The admin API creates, rotates and removes a partner's client at the organisation's issuer (a real
 * oidc-provider with dynamic registration), as `token-client create`/`rotate-secret`/`remove` do:
 * the hand-over is answered once, the roles are today's, and no registration access token leaves the
 * database sealed.
 */
describe('the admin API creates partner clients at the issuer', () => {
  let database: TestDatabase;
  let staff: AdminIssuer;
  let issuer: TestIssuer;
  let registration: TestIssuerRegistration;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;
  const tokens = new Map<AdminPersonName, string>();
  const answers: string[] = [];

  async function api(person: AdminPersonName, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const response = await fetch(`${service.adminBase}${path}`, {
      method,
      headers: { authorization: `Bearer ${tokens.get(person)}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    answers.push(text);
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
  }
  async function ok(person: AdminPersonName, method: string, path: string, body?: unknown, status = 200): Promise<any> {
    const answer = await api(person, method, path, body);
    assert.equal(answer.status, status, `${method} ${path}: ${JSON.stringify(answer.body)}`);
    return answer.body;
  }
  const allowed = async (token: string) => verdict(await check(client, { authorization: `Bearer ${token}` }));

  before(async () => {
    database = await freshDatabase();
    staff = await startAdminIssuer();
    issuer = await startTestIssuer({ clients: [], registration: true });
    registration = issuer.registration as TestIssuerRegistration;
    service = await startService({
      DATABASE_URL: database.url,
      ...staff.env(),
      TOKEN_ISSUER: issuer.issuer,
      TOKEN_AUDIENCE: issuer.audience,
      TOKEN_JWKS_URL: issuer.jwksUrl,
      TOKEN_REGISTRATION_TOKEN: registration.initialAccessToken,
      LOG_LEVEL: 'debug',
    });
    client = authorizationClient(service.grpcTarget);
    for (const person of ['viewer', 'manager'] as const) tokens.set(person, await staff.tokenFor(person));
    await ok('manager', 'POST', '/api/v1/sites', { id: '1001', name: 'Acme Travel' }, 201);
    await ok('manager', 'POST', '/api/v1/sites/1001/allowlist', { entries: ['203.0.113.0/24'] }, 201);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await issuer?.close();
    await staff?.close();
    await database?.drop();
  });

  let handover: { client_id: string; client_secret: string; token_endpoint: string; resource: string; guide_url: string | null };

  it('answers the hand-over once to an account manager, whose credentials get a token that is allowed', async () => {
    assert.equal((await api('viewer', 'POST', '/api/v1/sites/1001/token-clients/create', {})).status, 403, 'a viewer creates nothing');
    handover = await ok('manager', 'POST', '/api/v1/sites/1001/token-clients/create', { note: 'Acme production' }, 201);
    assert.deepEqual(Object.keys(handover), ['client_id', 'client_secret', 'token_endpoint', 'resource', 'guide_url']);
    assert.deepEqual([handover.token_endpoint, handover.resource, handover.guide_url], [issuer.tokenEndpoint, issuer.audience, null]);
    const token = await issuer.mintAccessToken({ clientId: handover.client_id, clientSecret: handover.client_secret }, { resource: handover.resource });
    await eventually('the new client to be allowed', () => allowed(token), (answer) => answer === 'allow', 5_000);
    const listed = await ok('viewer', 'GET', '/api/v1/token-clients?siteId=1001');
    assert.deepEqual(listed.items.map((c: { clientId: string; authMethod: string }) => [c.clientId, c.authMethod]), [[handover.client_id, 'client_secret_basic']]);
    const { items } = await ok('viewer', 'GET', '/api/v1/audit?action=token-client.create&limit=1');
    assert.equal(items[0].actor, MANAGER);
    assert.deepEqual(items[0].details, { clientId: handover.client_id, note: 'Acme production', authMethod: 'client_secret_basic' });
  });

  it('rotates the secret for an account manager: the old one is refused, the new one works', async () => {
    assert.equal((await api('viewer', 'POST', `/api/v1/token-clients/${encodeURIComponent(handover.client_id)}/rotate-secret`)).status, 403);
    const rotated = await ok('manager', 'POST', `/api/v1/token-clients/${encodeURIComponent(handover.client_id)}/rotate-secret`);
    assert.notEqual(rotated.client_secret, handover.client_secret);
    await assert.rejects(issuer.mintAccessToken({ clientId: handover.client_id, clientSecret: handover.client_secret }), (error: TokenRequestRefused) => error.error === 'invalid_client');
    assert.equal(await allowed(await issuer.mintAccessToken({ clientId: rotated.client_id, clientSecret: rotated.client_secret })), 'allow');
  });

  it("creates a client for the partner's public keys, and refuses a private key with words about the field", async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const refused = await api('manager', 'POST', '/api/v1/sites/1001/token-clients/create', { jwks: { keys: [await exportJWK(privateKey)] } });
    assert.equal(refused.status, 400);
    assert.deepEqual([refused.body.error.code, refused.body.error.field], ['JWKS_PRIVATE_KEY', 'jwks']);
    assert.match(refused.body.error.message, /^the partner's key set: key 1 is private \(it has "d"\)/);
    assert.doesNotMatch(refused.body.error.message, /--/, 'no CLI flag in an API answer');
    const both = await api('manager', 'POST', '/api/v1/sites/1001/token-clients/create', { jwks: { keys: [] }, jwksUri: 'https://partner.example/jwks' });
    assert.deepEqual([both.status, both.body.error.code, both.body.error.field], [400, 'JWKS_TWICE', 'jwksUri']);
    assert.match(both.body.error.message, /give the partner's public keys once: as a key set or as its URL, not both/);
    const keyed = await ok('manager', 'POST', '/api/v1/sites/1001/token-clients/create', { jwks: { keys: [await exportJWK(publicKey)] } }, 201);
    assert.equal('client_secret' in keyed, false);
    const rotate = await api('manager', 'POST', `/api/v1/token-clients/${encodeURIComponent(keyed.client_id)}/rotate-secret`);
    assert.deepEqual([rotate.status, rotate.body.error.code], [409, 'TOKEN_CLIENT_NOT_MANAGED']);
  });

  it('removes a client at the issuer and here; says which side refused when the issuer does', async () => {
    const removed = await ok('manager', 'DELETE', `/api/v1/token-clients/${encodeURIComponent(handover.client_id)}`);
    assert.deepEqual([removed.clientId, removed.deletedAtIssuer], [handover.client_id, true]);
    assert.equal(await registration.has(handover.client_id), false);
    await assert.rejects(issuer.mintAccessToken({ clientId: handover.client_id, clientSecret: handover.client_secret }), TokenRequestRefused);

    const nowhere = await api('manager', 'POST', '/api/v1/sites/4242/token-clients/create', {});
    assert.deepEqual([nowhere.status, nowhere.body.error.code], [404, 'SITE_NOT_FOUND']);
    assert.match(nowhere.body.error.message, /site 4242 does not exist.*; the client \S+ registered at the issuer was deleted again/);
  });

  it('says a client whose removal stopped half-way may be gone at the issuer already, in the words of the API and of the console', async () => {
    const created = await ok('manager', 'POST', '/api/v1/sites/1001/token-clients/create', { note: 'half-removed' }, 201);
    // The issuer deleted it, and the database step here failed: what a retry then finds.
    const deleted = await fetch(`${registration.endpoint}/${encodeURIComponent(created.client_id)}`, { method: 'DELETE', headers: { authorization: `Bearer ${registration.accessTokens.at(-1)}` } });
    assert.equal(deleted.status, 204);
    const path = `/api/v1/token-clients/${encodeURIComponent(created.client_id)}`;
    const retried = await api('manager', 'DELETE', path);
    assert.deepEqual([retried.status, retried.body.error.code], [502, 'ISSUER_REFUSED']);
    assert.match(retried.body.error.message, /HTTP 401.*; the client was not removed here; it may already be deleted at the issuer .*Either way: remove this one here only: DELETE \/api\/v1\/token-clients\/\S+\?localOnly=true$/);
    assert.doesNotMatch(retried.body.error.message, /here or there|sitekey-authz/);
    assert.match(retried.body.error.consoleMessage, /Either way: remove this one here only: Remove, then Remove here only, in client \S+'s row$/);
    assert.doesNotMatch(retried.body.error.consoleMessage, /localOnly|local-only/);
    const removed = await ok('manager', 'DELETE', `${path}?localOnly=true`);
    assert.deepEqual([removed.clientId, removed.deletedAtIssuer], [created.client_id, false]);
  });

  it('shows and logs no registration access token', async () => {
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    try {
      const audit = JSON.stringify((await sql.query('SELECT * FROM audit_log')).rows);
      const cli = await runCli(database.url, ['token-client', 'list', '--json']);
      const seen = [...answers, audit, cli.stdout, service.output()].join('\n');
      assert.ok(registration.accessTokens.length >= 3);
      for (const token of [...registration.accessTokens, registration.initialAccessToken]) assert.equal(seen.includes(token), false);
    } finally {
      await sql.end();
    }
  });
});
