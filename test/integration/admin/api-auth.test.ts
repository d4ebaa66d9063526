import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { ADMIN_ROUTES } from '../../../src/admin/admin-routes.js';
import { AdminTokenVerifier } from '../../../src/admin/admin-token.js';
import { ADMIN_ROLES, type AdminRole } from '../../../src/admin/principal.js';
import type { AdminRoute } from '../../../src/admin/route-table.js';
import { loadConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/observe/logger.js';
import { IssuerKeys } from '../../../src/token/issuer-keys.js';
import { startAdminIssuer, type AdminIssuer, type AdminPersonName } from '../../support/admin-issuer.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { startService, type RunningService } from '../../support/service.js';

/** Sample values for each path parameter: enough to reach the route, whatever they name. */
const SAMPLE_PARAMS: Record<string, string> = { siteId: '1001', keyId: '1', entry: '203.0.113.0%2F24', clientId: 'partner-1001', brownoutId: '1' };
const pathOf = (route: AdminRoute): string => route.path.replace(/\{(\w+)\}/g, (_, name: string) => SAMPLE_PARAMS[name] ?? 'x');
const label = (route: AdminRoute): string => `${route.method} ${route.path}`;

/** The person whose roles fall just short of the route's. */
const TOO_SMALL: Record<AdminRole, AdminPersonName> = { viewer: 'outsider', 'account-manager': 'viewer', admin: 'manager' };

describe('the admin API asks every request for a token from ADMIN_ISSUER, and the role its route needs', () => {
  let database: TestDatabase;
  let issuer: AdminIssuer;
  let service: RunningService;
  const tokens = new Map<AdminPersonName, string>();
  let base = '';

  const call = (route: AdminRoute, token?: string) =>
    fetch(`${base}${pathOf(route)}`, {
      method: route.method,
      headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...(route.body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(route.body === undefined ? {} : { body: '{}' }),
    });

  before(async () => {
    database = await freshDatabase();
    issuer = await startAdminIssuer();
    service = await startService({ DATABASE_URL: database.url, ...issuer.env() });
    base = service.adminBase ?? '';
    for (const person of ['viewer', 'manager', 'admin', 'outsider'] as const) tokens.set(person, await issuer.tokenFor(person));
  });

  after(async () => {
    await service?.stop();
    await issuer?.close();
    await database?.drop();
  });

  it('answers 401 with the Bearer challenge, and no error attribute, on every route but the document when no token is sent', async () => {
    for (const route of ADMIN_ROUTES.filter((candidate) => candidate.role !== 'public')) {
      const response = await call(route);
      assert.equal(response.status, 401, label(route));
      assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="sitekey-authz-admin"', label(route));
      assert.equal(response.headers.get('cache-control'), 'no-store');
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
      const body = (await response.json()) as { error: { code: string } };
      assert.equal(body.error.code, 'UNAUTHENTICATED', label(route));
    }
  });

  it('answers 403 naming the role on every route to a person whose role is too small', async () => {
    for (const route of ADMIN_ROUTES.filter((candidate) => candidate.role !== 'public')) {
      const role = route.role as AdminRole;
      const response = await call(route, tokens.get(TOO_SMALL[role]));
      assert.equal(response.status, 403, `${label(route)} as ${TOO_SMALL[role]}`);
      const body = (await response.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'FORBIDDEN');
      assert.match(body.error.message, new RegExp(`needs the role ${role}`), label(route));
    }
  });

  it("names ADMIN_ROLES_CLAIM in the 403 when a provider's token does not carry that claim at all", async () => {
    // The provider writes the roles under `groups`; this service reads `roles`.
    const elsewhere = await startAdminIssuer({ rolesClaim: 'groups' });
    const misread = await startService({ DATABASE_URL: database.url, ...elsewhere.env(), ADMIN_ROLES_CLAIM: 'roles' });
    try {
      const response = await fetch(`${misread.adminBase ?? ''}/api/v1/sites`, { headers: { authorization: `Bearer ${await elsewhere.tokenFor('admin')}` } });
      assert.equal(response.status, 403);
      const body = (await response.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'FORBIDDEN');
      assert.equal(
        body.error.message,
        'this needs the role viewer (or a higher one); your token carries no roles claim (ADMIN_ROLES_CLAIM), so it has no role: the provider must put viewer, account-manager or admin in it',
      );
    } finally {
      await misread.stop();
      await elsewhere.close();
    }
  });

  it('lets each role through to the routes of its rank and below', async () => {
    for (const route of ADMIN_ROUTES.filter((candidate) => candidate.role !== 'public')) {
      const role = route.role as AdminRole;
      for (const [person, held] of [['viewer', 'viewer'], ['manager', 'account-manager'], ['admin', 'admin']] as const) {
        if (ADMIN_ROLES.indexOf(held) < ADMIN_ROLES.indexOf(role)) continue;
        const response = await call(route, tokens.get(person));
        assert.ok(![401, 403].includes(response.status), `${label(route)} as ${person}: ${response.status} ${await response.text()}`);
      }
    }
  });

  it('serves the OpenAPI document without a token', async () => {
    const response = await fetch(`${base}/api/v1/openapi.json`);
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as { openapi: string }).openapi, '3.1.0');
  });

  it('says who the token is for', async () => {
    const response = await fetch(`${base}/api/v1/me`, { headers: { authorization: `Bearer ${tokens.get('manager')}` } });
    assert.deepEqual(await response.json(), { subject: '248289761002', email: 'manager@example.test', name: 'Max Manager', roles: ['account-manager'] });
  });

  it('refuses forged, unsigned, foreign and malformed tokens with 401 and the invalid_token challenge', async () => {
    const real = tokens.get('admin') ?? '';
    const claims = decodeJwt(real);
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: 'admin-issuer-1' }).sign(privateKey);
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${encode({ alg: 'none', typ: 'at+jwt' })}.${encode(claims)}.`;
    const hmacKey = new TextEncoder().encode(JSON.stringify(await exportJWK((await generateKeyPair('RS256', { extractable: true })).publicKey)));
    const hmac = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: 'admin-issuer-1' }).sign(hmacKey);
    const otherAudience = await issuer.tokenFor('admin', { resource: issuer.otherAudience });
    const cases: Array<[string, string, RegExp]> = [
      ['a token signed with a key that is not the provider\'s', forged, /signature does not verify/],
      ['alg none', unsigned, /algorithm that is not accepted/],
      ['HS256 with a public key as the secret', hmac, /algorithm that is not accepted/],
      ["a token for another API (the provider's, real)", otherAudience, /another audience than ADMIN_AUDIENCE/],
      ['no JWT at all', 'not-a-token', /not a JWT/],
      ['a real token with its payload edited', `${real.split('.')[0]}.${encode({ ...claims, roles: ['admin'], sub: 'someone-else' })}.${real.split('.')[2]}`, /signature does not verify/],
    ];
    for (const [what, token, reason] of cases) {
      const response = await fetch(`${base}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(response.status, 401, what);
      const challenge = response.headers.get('www-authenticate') ?? '';
      assert.match(challenge, /^Bearer realm="sitekey-authz-admin", error="invalid_token", error_description="[^"]+"$/, what);
      assert.match(challenge, reason, what);
      assert.ok(!service.output().includes(token), `${what}: the token is not logged`);
    }
    const basic = await fetch(`${base}/api/v1/me`, { headers: { authorization: 'Basic dXNlcjpwYXNz' } });
    assert.equal(basic.status, 401);
    assert.match(basic.headers.get('www-authenticate') ?? '', /error="invalid_request"/);
  });

  it('refuses an expired token by the same rules as partner tokens (exp plus the clock skew)', async () => {
    const config = loadConfig({ ...issuer.env() });
    assert.ok(config.admin);
    const keys = new IssuerKeys({ issuer: issuer.issuer, setting: 'ADMIN_ISSUER', logger: createLogger('silent') });
    await keys.start();
    try {
      const verifier = new AdminTokenVerifier(config.admin, keys);
      const token = tokens.get('viewer') ?? '';
      const exp = (decodeJwt(token).exp ?? 0) * 1000;
      assert.equal((await verifier.verify(token, exp - 1_000)).ok, true);
      assert.equal((await verifier.verify(token, exp + 29_000)).ok, true, 'within the 30 s of skew');
      const expired = await verifier.verify(token, exp + 31_000);
      assert.deepEqual(expired, { ok: false, status: 401, error: 'invalid_token', description: 'the access token has expired; sign in again' });
    } finally {
      await keys.stop();
    }
  });

  it('limits each person to a burst of requests, answering 429 with Retry-After beyond, without slowing others', async () => {
    const answers = await Promise.all(
      // Fewer than the connections one address may hold (ADMIN_LIMITS), more than a person's burst.
      Array.from({ length: 100 }, () => fetch(`${base}/api/v1/me`, { headers: { authorization: `Bearer ${tokens.get('outsider')}` } }).then((r) => r)),
    );
    const limited = answers.filter((response) => response.status === 429);
    assert.ok(limited.length > 0, `some of 100 requests at once are limited: ${answers.map((r) => r.status).join(',')}`);
    assert.match(limited[0]?.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
    assert.equal(((await limited[0]?.json()) as { error: { code: string } }).error.code, 'RATE_LIMITED');
    const other = await fetch(`${base}/api/v1/me`, { headers: { authorization: `Bearer ${tokens.get('viewer')}` } });
    assert.equal(other.status, 200, 'another person is not limited');
  });
});
