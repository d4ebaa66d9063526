import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { loadConfig } from '../../../src/config.js';
import { AdminError, CredentialAdmin } from '../../../src/store/credential-admin.js';
import { ClientOnboarding } from '../../../src/token/client-onboarding.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

const INITIAL_TOKEN = 'initial-access-token-0123456789';

/**
 * What a real oidc-provider never does, from an issuer whose answers the test writes, against a real
 * database: a client id that is already bound here, an undo that fails too, an issuer that keeps the
 * secret on update.
 */
describe('creating and rotating partner clients when the issuer or the database refuses half-way', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let origin = '';
  const asked: string[] = [];
  let answer: (request: IncomingMessage, response: ServerResponse) => void = () => undefined;
  const server = createServer((request, response) => {
    asked.push(`${request.method} ${request.url}`);
    if (request.url?.startsWith('/.well-known/')) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer: origin, token_endpoint: `${origin}/token`, registration_endpoint: `${origin}/reg` }));
    } else answer(request, response);
  });
  const json = (response: ServerResponse, status: number, body: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const registered = (clientId: string) => (_request: IncomingMessage, response: ServerResponse) =>
    json(response, 201, { client_id: clientId, client_secret: 'secret-1', token_endpoint_auth_method: 'client_secret_basic', registration_client_uri: `${origin}/reg/${clientId}`, registration_access_token: 'rat-1' });

  let onboarding: ClientOnboarding;
  let admin: CredentialAdmin;

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const config = loadConfig({
      DATABASE_URL: database.url,
      TOKEN_ISSUER: origin,
      TOKEN_AUDIENCE: 'https://partner-api.test',
      TOKEN_JWKS_URL: `${origin}/jwks`,
      TOKEN_REGISTRATION_TOKEN: INITIAL_TOKEN,
    });
    admin = new CredentialAdmin(pool, 'am@example.com');
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
});
