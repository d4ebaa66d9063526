import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { startAdminIssuer, type AdminIssuer } from '../../support/admin-issuer.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { startService, type RunningService } from '../../support/service.js';

/** GET /api/v1/me with the token: its status and the challenge's error_description, if any. */
async function me(service: RunningService, token: string): Promise<{ status: number; description: string | undefined }> {
  const response = await fetch(`${service.adminBase ?? ''}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });
  await response.arrayBuffer();
  const challenge = response.headers.get('www-authenticate') ?? '';
  return { status: response.status, description: /error_description="([^"]*)"/.exec(challenge)?.[1] };
}

describe('the admin port takes the token types of ADMIN_TOKEN_TYPES from a real provider, and never its ID tokens', () => {
  let database: TestDatabase;
  // Providers as Keycloak, Entra ID and Auth0 (typ JWT) and Okta (no typ) write their access tokens.
  let writesJwt: AdminIssuer;
  let writesNoType: AdminIssuer;
  const services: RunningService[] = [];
  const serve = async (issuer: AdminIssuer, env: Record<string, string> = {}) => {
    const service = await startService({ DATABASE_URL: database.url, ...issuer.env(), ...env });
    services.push(service);
    return service;
  };

  before(async () => {
    database = await freshDatabase();
    writesJwt = await startAdminIssuer({ accessTokenType: 'JWT' });
    writesNoType = await startAdminIssuer({ accessTokenType: null });
  });

  after(async () => {
    for (const service of services) await service.stop();
    await writesJwt?.close();
    await writesNoType?.close();
    await database?.drop();
  });

  it('refuses a JWT-typed token by default (at+jwt), naming ADMIN_TOKEN_TYPES, and accepts it with ADMIN_TOKEN_TYPES=JWT', async () => {
    const token = await writesJwt.tokenFor('viewer');
    assert.equal(decodeProtectedHeader(token).typ, 'JWT', 'the provider writes typ JWT');
    const strict = await serve(writesJwt);
    assert.deepEqual(await me(strict, token), { status: 401, description: 'the access token is not an access token of a type ADMIN_TOKEN_TYPES accepts (typ at+jwt)' });
    const lenient = await serve(writesJwt, { ADMIN_TOKEN_TYPES: 'JWT' });
    assert.equal((await me(lenient, token)).status, 200);
  });

  it('accepts a token without typ only with ADMIN_TOKEN_TYPES=none', async () => {
    const token = await writesNoType.tokenFor('viewer');
    assert.equal(decodeProtectedHeader(token).typ, undefined, 'the provider writes no typ');
    const lenient = await serve(writesNoType, { ADMIN_TOKEN_TYPES: 'none' });
    assert.equal((await me(lenient, token)).status, 200);
    const jwtOnly = await serve(writesNoType, { ADMIN_TOKEN_TYPES: 'JWT' });
    assert.equal((await me(jwtOnly, token)).status, 401);
  });

  it("refuses the same provider's ID token with JWT and none accepted: it is for the console's client id, not ADMIN_AUDIENCE", async () => {
    const lenient = await serve(writesJwt, { ADMIN_TOKEN_TYPES: 'at+jwt,JWT,none' });
    const idToken = await writesJwt.tokenFor('admin', { idToken: true });
    assert.equal(decodeJwt(idToken).aud, writesJwt.clientId, 'an ID token, for the console');
    assert.deepEqual(await me(lenient, idToken), { status: 401, description: 'the access token is for another audience than ADMIN_AUDIENCE' });
    assert.equal((await me(lenient, await writesJwt.tokenFor('admin'))).status, 200, 'the access token of the same sign-in works');
  });
});
