import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { loadConfig } from '../../../src/config.js';
import { AdminError, adminErrorText, CredentialAdmin } from '../../../src/store/credential-admin.js';
import { ClientOnboarding } from '../../../src/token/client-onboarding.js';
import { ISSUER_LIMITS } from '../../../src/token/issuer-http.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

const INITIAL_TOKEN = 'initial-access-token-0123456789';

/**
 * What a real oidc-provider never does, from an issuer whose answers the test writes, against a real
 * database: a client id that is already bound here, an undo that fails too, an issuer that keeps the
 * secret on update, a management address elsewhere, an update that fails half-way, a slow issuer.
 */
describe('creating and rotating partner clients when the issuer or the database refuses half-way', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let origin = '';
  /** The same server under another origin: a host the registration access token must never reach. */
  let elsewhere = '';
  let registrationEndpoint = () => `${origin}/reg`;
  const asked: string[] = [];
  let answer: (request: IncomingMessage, response: ServerResponse) => void = () => undefined;
  const server = createServer((request, response) => {
    asked.push(`${request.method} ${request.url}`);
    if (request.url?.startsWith('/.well-known/')) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer: origin, token_endpoint: `${origin}/token`, registration_endpoint: registrationEndpoint() }));
    } else answer(request, response);
  });
  const json = (response: ServerResponse, status: number, body: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const registered = (clientId: string) => (_request: IncomingMessage, response: ServerResponse) =>
    json(response, 201, { client_id: clientId, client_secret: 'secret-1', token_endpoint_auth_method: 'client_secret_basic', registration_client_uri: `${origin}/reg/${clientId}`, registration_access_token: 'rat-1' });

  let onboarding: ClientOnboarding;
  let admin: CredentialAdmin;
  let config: ReturnType<typeof loadConfig>;

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    elsewhere = `http://localhost:${(server.address() as AddressInfo).port}`;
    config = loadConfig({
      DATABASE_URL: database.url,
      TOKEN_ISSUER: origin,
      TOKEN_AUDIENCE: 'https://partner-api.test',
      TOKEN_JWKS_URL: `${origin}/jwks`,
      TOKEN_REGISTRATION_TOKEN: INITIAL_TOKEN,
    });
    admin = new CredentialAdmin(pool, { kind: 'cli', subject: 'am@example.com' });
    onboarding = new ClientOnboarding(admin, config);
    await admin.addSite('1001', '');
    await admin.tokens.addClient('1001', 'taken', 'added by id');
  });

  after(async () => {
    server.closeAllConnections();
    server.close();
    await pool?.end();
    await database?.drop();
  });

  it('deletes the client at the issuer again when its id is bound here already, and says both', async () => {
    asked.length = 0;
    answer = (request, response) => (request.method === 'POST' ? registered('taken')(request, response) : response.writeHead(204).end());
    await assert.rejects(onboarding.create({ siteId: '1001', note: '', keys: undefined }), (error: unknown) => {
      assert.ok(error instanceof AdminError);
      assert.equal(error.code, 'TOKEN_CLIENT_EXISTS');
      assert.match(error.message, /already registered to site 1001.*; the client taken registered at the issuer was deleted again$/);
      return true;
    });
    assert.deepEqual(asked.filter((line) => !line.includes('well-known')), ['POST /reg', 'DELETE /reg/taken']);
    const rows = await pool.query("SELECT note, auth_method FROM token_clients WHERE client_id = 'taken'");
    assert.deepEqual(rows.rows, [{ note: 'added by id', auth_method: null }], 'the client bound before is untouched');
  });

  it('names the client to delete by hand when that undo fails too', async () => {
    answer = (request, response) => (request.method === 'POST' ? registered('taken')(request, response) : json(response, 500, { error: 'server_error' }));
    await assert.rejects(onboarding.create({ siteId: '1001', note: '', keys: undefined }), /deleting client taken at the issuer failed too \(HTTP 500 server_error\): delete it there by hand/);
  });

  it('says so when the issuer keeps the secret on update, and records no rotation', async () => {
    answer = registered('kept');
    await onboarding.create({ siteId: '1001', note: '', keys: undefined });
    asked.length = 0;
    answer = (request, response) =>
      json(response, 200, { client_id: 'kept', client_secret: 'secret-1', token_endpoint_auth_method: 'client_secret_basic', registration_client_uri: `${origin}/reg/kept`, registration_access_token: 'rat-1' });
    await assert.rejects(onboarding.rotateSecret('kept'), /the issuer's answer to give client kept a new secret cannot be used: the issuer kept the client secret on update .*: rotate the secret at the issuer by hand, or create a new client for the site and remove this one; the secret it has still works/);
    assert.deepEqual(asked.filter((line) => !line.includes('well-known')), ['GET /reg/kept', 'PUT /reg/kept']);
    assert.equal((await pool.query("SELECT count(*)::int AS n FROM audit_log WHERE action = 'token-client.rotate-secret'")).rows[0].n, 0);
  });

  const requests = () => asked.filter((line) => !line.includes('well-known'));
  const created = async (clientId: string) => {
    answer = registered(clientId);
    await onboarding.create({ siteId: '1001', note: '', keys: undefined });
    asked.length = 0;
  };

  it('refuses a registration whose registration_client_uri is not where the registration endpoint is, and sends its token nowhere', async () => {
    asked.length = 0;
    answer = (_request, response) =>
      json(response, 201, { client_id: 'foreign', client_secret: 'secret-1', registration_client_uri: `${elsewhere}/reg/foreign`, registration_access_token: 'rat-1' });
    await assert.rejects(
      onboarding.create({ siteId: '1001', note: '', keys: undefined }),
      new RegExp(`registration_client_uri is on ${elsewhere}, not on ${origin} where the issuer's registration_endpoint is.*; delete client foreign at the issuer by hand; nothing was stored`),
    );
    assert.deepEqual(requests(), ['POST /reg'], 'no DELETE to the other host');
    assert.equal((await pool.query("SELECT count(*)::int AS n FROM token_clients WHERE client_id = 'foreign'")).rows[0].n, 0);
  });

  it('sends no registration access token to a registration_client_uri changed in the database', async () => {
    await created('moved');
    await pool.query("UPDATE token_clients SET registration_client_uri = $1 WHERE client_id = 'moved'", [`${elsewhere}/reg/moved`]);
    for (const attempt of [() => onboarding.rotateSecret('moved'), () => onboarding.remove('moved', false)]) {
      await assert.rejects(attempt(), (error: unknown) => {
        assert.ok(error instanceof AdminError);
        assert.equal(error.code, 'REGISTRATION_TOKEN_UNREADABLE');
        assert.match(error.message, /the stored registration of client moved was altered .*the token is not sent anywhere.*delete the client at the issuer by hand and replace it$/);
        assert.deepEqual(error.nextStep, { removeHereOnly: 'moved', createClientFor: '1001' });
        return true;
      });
    }
    assert.deepEqual(requests(), []);
  });

  it("sends no registration access token once the issuer's registration endpoint is on another host", async () => {
    await created('left');
    registrationEndpoint = () => `${elsewhere}/reg`;
    try {
      await assert.rejects(onboarding.rotateSecret('left'), /client left cannot be managed from here: the registration_client_uri is on http:\/\/127\.0\.0\.1:\d+, not on http:\/\/localhost:\d+ .*its registration access token was not sent/);
      await assert.rejects(onboarding.remove('left', false), (error: unknown) => {
        assert.ok(error instanceof AdminError);
        assert.match(error.message, /client left cannot be managed from here: .*Manage the client at the issuer by hand, or replace it$/);
        assert.deepEqual(error.nextStep, { removeHereOnly: 'left', createClientFor: '1001' });
        return true;
      });
    } finally {
      registrationEndpoint = () => `${origin}/reg`;
    }
    assert.deepEqual(requests(), []);
  });

  it('says the old secret still works when the read before the update fails, and that the outcome is unknown once the update was sent', async () => {
    await created('halfway');
    answer = (_request, response) => json(response, 500, { error: 'server_error' });
    await assert.rejects(onboarding.rotateSecret('halfway'), /the issuer refused to give client halfway a new secret: HTTP 500 server_error; the secret it has still works$/);
    const failures: Array<[string, (request: IncomingMessage, response: ServerResponse) => void, RegExp]> = [
      ['a 500 after the update', (_request, response) => json(response, 500, { error: 'server_error' }), /refused to give client halfway a new secret: HTTP 500/],
      ['a connection reset', (request, response) => response.socket?.destroy(), /gave no usable answer to give client halfway a new secret/],
      ['an answer without the secret', (_request, response) => json(response, 200, { client_id: 'halfway' }), /has no client_secret/],
    ];
    for (const [what, put, failure] of failures) {
      answer = (request, response) =>
        request.method === 'GET' ? json(response, 200, { client_id: 'halfway', client_secret: 'secret-1', token_endpoint_auth_method: 'client_secret_basic' }) : put(request, response);
      await assert.rejects(onboarding.rotateSecret('halfway'), (error: unknown) => {
        assert.ok(error instanceof AdminError, what);
        assert.match(error.message, failure, what);
        assert.match(error.message, /the outcome is unknown: .*the old one may no longer work\. To replace the client$/, what);
        assert.deepEqual(error.nextStep, { removeHereOnly: 'halfway', createClientFor: '1001' }, what);
        assert.doesNotMatch(error.message, /still works/, what);
        return true;
      });
    }
  });

  it('ends a whole operation at its deadline, however the issuer drags it out', async () => {
    const hasty = new ClientOnboarding(admin, config, ISSUER_LIMITS, 500);
    answer = () => undefined; // never answers
    const started = Date.now();
    await assert.rejects(hasty.create({ siteId: '1001', note: '', keys: undefined }), /the issuer gave no usable answer to register the client: POST http:\/\/127\.0\.0\.1:\d+: the operation ran out of time; nothing was stored/);
    assert.ok(Date.now() - started < 5_000, 'long before the 10 s of one exchange');
  });

  it('says a client refused with 401 on removal may be deleted at the issuer already, and keeps it here', async () => {
    await created('gone');
    answer = (_request, response) => json(response, 401, { error: 'invalid_token' });
    await assert.rejects(onboarding.remove('gone', false), (error: unknown) => {
      assert.ok(error instanceof AdminError);
      assert.match(error.message, /refused to delete client gone: HTTP 401 invalid_token; the client was not removed here; it may already be deleted at the issuer .*Either way$/);
      assert.deepEqual(error.nextStep, { removeHereOnly: 'gone' });
      assert.doesNotMatch(error.message, /not removed, here or there/);
      return true;
    });
    assert.equal((await pool.query("SELECT count(*)::int AS n FROM token_clients WHERE client_id = 'gone'")).rows[0].n, 1);
  });

  it('words the next step for each transport: a command, a request, a button', () => {
    const error = new AdminError('ISSUER_UNREACHABLE', 'the outcome is unknown. To replace the client', { removeHereOnly: 'c/1', createClientFor: '1001' });
    assert.equal(
      adminErrorText(error, 'cli'),
      'the outcome is unknown. To replace the client: create a new client for the site (`sitekey-authz token-client create 1001`), then remove this one here only: `sitekey-authz token-client remove c/1 --local-only`',
    );
    assert.equal(
      adminErrorText(error, 'api'),
      'the outcome is unknown. To replace the client: create a new client for the site (POST /api/v1/sites/1001/token-clients/create), then remove this one here only: DELETE /api/v1/token-clients/c%2F1?localOnly=true',
    );
    const console = adminErrorText(error, 'console');
    assert.match(console, /with Create client below, then remove this one here only: Remove, then Remove here only, in client c\/1's row$/);
    assert.doesNotMatch(console, /local-only|localOnly|sitekey-authz/);
    assert.equal(adminErrorText(new AdminError('ISSUER_REFUSED', 'no step'), 'console'), 'no step');
  });
});
