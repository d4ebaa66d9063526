import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { CompactSign, createLocalJWKSet, type JWTPayload } from 'jose';
import { AdminTokenVerifier, BearerAuthenticator, NEW_TOKEN_CHECKS } from '../../src/admin/admin-token.js';
import { rolesHeld } from '../../src/admin/principal.js';
import { loadConfig, type AdminSettings } from '../../src/config.js';
import type { KeySource } from '../../src/token/issuer-keys.js';
import { signedToken, signingKey } from '../support/jwks-server.js';

const ISSUER = 'https://login.corp.example/realms/staff';
const AUDIENCE = 'https://authz-admin.corp.example';
const NOW = Date.parse('2026-11-24T10:00:00Z');

function settings(env: Record<string, string> = {}): AdminSettings {
  const admin = loadConfig({ ADMIN_ISSUER: ISSUER, ADMIN_AUDIENCE: AUDIENCE, ...env }).admin;
  assert.ok(admin);
  return admin;
}

const claims = (overrides: JWTPayload = {}): JWTPayload => ({
  iss: ISSUER,
  aud: AUDIENCE,
  sub: '248289761002',
  email: 'manager@corp.example',
  email_verified: true,
  roles: ['account-manager'],
  iat: NOW / 1000 - 60,
  exp: NOW / 1000 + 300,
  ...overrides,
});

async function fixture(env: Record<string, string> = {}) {
  const key = await signingKey('admin-1');
  const keys: KeySource = { loaded: true, getKey: createLocalJWKSet({ keys: [key.publicJwk] }) };
  const verifier = new AdminTokenVerifier(settings(env), keys, () => NOW);
  return { key, verifier, sign: (payload: JWTPayload, header: Record<string, unknown> = {}) => signedToken(key, payload, header) };
}

const request = (authorization?: string) => ({ headers: authorization === undefined ? {} : { authorization } }) as IncomingMessage;

describe('admin access tokens', () => {
  it('give the person: subject, e-mail, name and the roles of ADMIN_ROLES_CLAIM', async () => {
    const { verifier, sign } = await fixture();
    const outcome = await verifier.verify(await sign(claims({ name: 'Max Manager' })));
    assert.ok(outcome.ok);
    assert.deepEqual({ ...outcome.principal, roles: [...outcome.principal.roles] }, { subject: '248289761002', email: 'manager@corp.example', name: 'Max Manager', roles: ['account-manager'] });
    const custom = await fixture({ ADMIN_ROLES_CLAIM: 'https://corp.example/roles' });
    const other = await custom.verifier.verify(await custom.sign(claims({ roles: undefined, 'https://corp.example/roles': 'viewer admin' })));
    assert.ok(other.ok);
    assert.deepEqual([...other.principal.roles], ['viewer', 'admin']);
  });

  it('read a nested ADMIN_ROLES_CLAIM by its dotted path, and a top-level claim of that very name first', async () => {
    const keycloak = await fixture({ ADMIN_ROLES_CLAIM: 'resource_access.sitekey-authz.roles' });
    const nested = await keycloak.verifier.verify(
      await keycloak.sign(claims({ roles: undefined, realm_access: { roles: ['viewer'] }, resource_access: { 'sitekey-authz': { roles: ['uma_protection', 'admin'] } } })),
    );
    assert.ok(nested.ok);
    assert.deepEqual([...nested.principal.roles], ['admin']);
    const shadowed = await keycloak.verifier.verify(await keycloak.sign(claims({ 'resource_access.sitekey-authz.roles': 'viewer', resource_access: { 'sitekey-authz': { roles: ['admin'] } } })));
    assert.ok(shadowed.ok);
    assert.deepEqual([...shadowed.principal.roles], ['viewer']);
    // A path that meets a list, a string or nothing grants no role; inherited members are not claims.
    for (const client of [['admin'], 'admin', null, {}, { roles: { admin: true } }]) {
      const outcome = await keycloak.verifier.verify(await keycloak.sign(claims({ roles: ['admin'], resource_access: { 'sitekey-authz': client } })));
      assert.ok(outcome.ok);
      assert.deepEqual([...outcome.principal.roles], [], JSON.stringify(client));
    }
    const inherited = await fixture({ ADMIN_ROLES_CLAIM: 'realm_access.constructor' });
    const outcome = await inherited.verifier.verify(await inherited.sign(claims({ realm_access: {} })));
    assert.ok(outcome.ok);
    assert.deepEqual([...outcome.principal.roles], []);
  });

  it('say when a token lacks ADMIN_ROLES_CLAIM altogether, which the 403 then names, as it does not for a claim without our roles', async () => {
    const keycloak = await fixture({ ADMIN_ROLES_CLAIM: 'resource_access.sitekey-authz.roles' });
    const missing = await keycloak.verifier.verify(await keycloak.sign(claims({ roles: ['admin'], realm_access: { roles: ['admin'] } })));
    assert.ok(missing.ok);
    assert.equal(missing.principal.rolesClaimMissing, 'resource_access.sitekey-authz.roles');
    assert.equal(
      rolesHeld(missing.principal),
      'your token carries no resource_access.sitekey-authz.roles claim (ADMIN_ROLES_CLAIM), so it has no role: the provider must put viewer, account-manager or admin in it',
    );
    const others = await keycloak.verifier.verify(await keycloak.sign(claims({ resource_access: { 'sitekey-authz': { roles: ['uma_protection'] } } })));
    assert.ok(others.ok);
    assert.equal(others.principal.rolesClaimMissing, undefined);
    assert.equal(rolesHeld(others.principal), 'your token has none of viewer, account-manager, admin');
    const held = await keycloak.verifier.verify(await keycloak.sign(claims({ resource_access: { 'sitekey-authz': { roles: ['viewer'] } } })));
    assert.ok(held.ok);
    assert.equal(rolesHeld(held.principal), 'your token has viewer');
  });

  it('are refused with 401 and a description for each rule a token breaks', async () => {
    const { verifier, sign } = await fixture();
    const cases: Array<[string, Promise<string>, RegExp]> = [
      ['expired beyond the skew', sign(claims({ exp: NOW / 1000 - 31 })), /has expired/],
      ['another audience', sign(claims({ aud: 'https://partner-api.example.com' })), /another audience/],
      ['another issuer', sign(claims({ iss: 'https://login.example.com' })), /another issuer/],
      ['not an access token', sign(claims(), { typ: 'JWT' }), /typ at\+jwt/],
      ['no sub', sign(claims({ sub: undefined })), /lacks a claim/],
      ['a sub with a control character', sign(claims({ sub: 'x\u0007y' })), /no usable sub/],
      ['issued in the future', sign(claims({ iat: NOW / 1000 + 120 })), /not valid yet/],
    ];
    for (const [what, token, description] of cases) {
      const outcome = await verifier.verify(await token);
      assert.equal(outcome.ok, false, what);
      if (!outcome.ok) {
        assert.equal(outcome.status, 401, what);
        assert.equal(outcome.error, 'invalid_token', what);
        assert.match(outcome.description, description, what);
      }
    }
  });

  it('accept a typ of ADMIN_TOKEN_TYPES only: at+jwt by default, JWT when listed, no typ only with none', async () => {
    const outcomes = async (env: Record<string, string>) => {
      const { verifier, sign } = await fixture(env);
      const cases: Record<string, Record<string, unknown>> = {
        'at+jwt': {},
        'application/at+jwt': { typ: 'application/at+jwt' },
        JWT: { typ: 'JWT' },
        'no typ': { typ: undefined },
        'typ "none"': { typ: 'none' },
        'typ id+jwt': { typ: 'id+jwt' },
      };
      const accepted: string[] = [];
      for (const [what, header] of Object.entries(cases)) if ((await verifier.verify(await sign(claims(), header))).ok) accepted.push(what);
      return accepted;
    };
    assert.deepEqual(await outcomes({}), ['at+jwt', 'application/at+jwt']);
    assert.deepEqual(await outcomes({ ADMIN_TOKEN_TYPES: 'at+jwt,JWT' }), ['at+jwt', 'application/at+jwt', 'JWT']);
    assert.deepEqual(await outcomes({ ADMIN_TOKEN_TYPES: 'JWT' }), ['JWT']);
    assert.deepEqual(await outcomes({ ADMIN_TOKEN_TYPES: 'none' }), ['no typ']);
    assert.deepEqual(await outcomes({ ADMIN_TOKEN_TYPES: 'at+jwt,JWT,none' }), ['at+jwt', 'application/at+jwt', 'JWT', 'no typ']);
  });

  it('name the accepted types when refusing a typ', async () => {
    const { verifier, sign } = await fixture({ ADMIN_TOKEN_TYPES: 'JWT,none' });
    const outcome = await verifier.verify(await sign(claims()));
    assert.equal(outcome.ok, false);
    if (!outcome.ok) assert.equal(outcome.description, 'the access token is not an access token of a type ADMIN_TOKEN_TYPES accepts (typ jwt, none)');
  });

  it('refuse an ID token of the same provider with JWT and none accepted: by its audience, and by its claims where the audience is ours', async () => {
    const { verifier, sign } = await fixture({ ADMIN_TOKEN_TYPES: 'at+jwt,JWT,none' });
    // An ID token as providers write them: typ JWT (or none), aud the console's client id, a nonce and at_hash.
    const idToken = claims({ aud: 'sitekey-authz-console', azp: 'sitekey-authz-console', nonce: 'n-0S6_WzA2Mj', at_hash: 'HK6E_P6Dh8Y93mRNtsDB1Q', auth_time: NOW / 1000 - 60 });
    for (const header of [{ typ: 'JWT' }, { typ: undefined }]) {
      const outcome = await verifier.verify(await sign(idToken, header));
      assert.equal(outcome.ok, false);
      if (!outcome.ok) assert.match(outcome.description, /another audience than ADMIN_AUDIENCE/);
    }
    const sameAudience: Array<[string, JWTPayload]> = [
      ['at_hash', { at_hash: 'HK6E_P6Dh8Y93mRNtsDB1Q' }],
      ['c_hash', { c_hash: 'LDktKdoQak3Pk0cnXxCltA' }],
      ["Keycloak's typ claim ID", { typ: 'ID' }],
    ];
    for (const [what, extra] of sameAudience) {
      const outcome = await verifier.verify(await sign(claims(extra), { typ: 'JWT' }));
      assert.equal(outcome.ok, false, what);
      if (!outcome.ok) assert.equal(outcome.description, 'this is an ID token; send an access token for ADMIN_AUDIENCE', what);
    }
    // Keycloak before 25 put the nonce into access tokens too, and writes typ Bearer in their payload.
    assert.equal((await verifier.verify(await sign(claims({ nonce: 'n-0S6_WzA2Mj', typ: 'Bearer' }), { typ: 'JWT' }))).ok, true);
  });

  it('drop an e-mail that could garble the audit trail, but keep the person', async () => {
    const { verifier, sign } = await fixture();
    const outcome = await verifier.verify(await sign(claims({ email: 'a\u202eb@corp.example' })));
    assert.ok(outcome.ok);
    assert.equal(outcome.principal.email, undefined);
  });

  it('take an e-mail only when the provider verified it, and only an address alone: an unverified or dressed-up one never names the person', async () => {
    const { verifier, sign } = await fixture();
    const dressed = 'admin@example.test (sub a-1003)';
    for (const [what, given] of [
      ['unverified', { sub: 'mallory-6', email: dressed, email_verified: false }],
      ['verified said as a string', { sub: 'mallory-6', email: 'admin@example.test', email_verified: 'true' }],
      ['without email_verified', { sub: 'mallory-6', email: 'admin@example.test', email_verified: undefined }],
      ['verified, but a name with a comment', { sub: 'mallory-6', email: dressed, email_verified: true }],
      ['verified, but two addresses', { sub: 'mallory-6', email: 'admin@example.test, mallory@example.test', email_verified: true }],
    ] as const) {
      const outcome = await verifier.verify(await sign(claims(given)));
      assert.ok(outcome.ok, what);
      assert.equal(outcome.principal.subject, 'mallory-6', what);
      assert.equal(outcome.principal.email, undefined, what);
    }
  });

  it('refuse a token issued longer ago than ADMIN_TOKEN_MAX_AGE_SECONDS (a day), or valid for longer, at no cost, and keep none beyond it', async () => {
    const DAY = 86_400;
    const NOW_S = NOW / 1000;
    let keyLookups = 0;
    let now = NOW;
    const key = await signingKey('admin-1');
    const jwks = createLocalJWKSet({ keys: [key.publicJwk] });
    const keys: KeySource = { loaded: true, getKey: (...args) => (keyLookups++, jwks(...args)) };
    const verifier = new AdminTokenVerifier(settings(), keys, () => now);
    const TOO_OLD = 'the access token was issued too long ago, or is valid for longer than ADMIN_TOKEN_MAX_AGE_SECONDS; sign in again';
    // JSON has no bound on a number: 1e400 reads as Infinity, which jose takes for a time.
    const payload = JSON.stringify(claims()).replace(/"exp":\d+/, '"exp":1e400');
    const neverExpiring = await new CompactSign(new TextEncoder().encode(payload)).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: 'admin-1' }).sign(key.privateKey);
    for (const [what, token] of [
      ['exp 1e400', neverExpiring],
      ['issued years ago, valid still', await signedToken(key, claims({ iat: NOW_S - 3 * 365 * DAY, exp: NOW_S + 300 }))],
      ['valid for two days', await signedToken(key, claims({ iat: NOW_S - 60, exp: NOW_S + 2 * DAY }))],
      ['without iat', await signedToken(key, claims({ iat: undefined }))],
    ] as const) {
      const outcome = await verifier.verify(token, now, '203.0.113.9');
      assert.equal(outcome.ok, false, what);
      assert.equal(!outcome.ok && outcome.status, 401, what);
      if (what !== 'without iat') assert.equal(!outcome.ok && outcome.description, TOO_OLD, what);
    }
    assert.equal(keyLookups, 0, 'refused before any signature check');

    // Within the bound a token is kept until its exp, which is within the bound of its iat: never past it.
    const day = await signedToken(key, claims({ iat: NOW_S - 60, exp: NOW_S - 60 + DAY }));
    assert.equal((await verifier.verify(day, now, '203.0.113.9')).ok, true);
    now = NOW + DAY * 1000;
    assert.equal((await verifier.verify(day, now, '203.0.113.9')).ok, false, 'not kept past its iat and the maximum age');
    now = NOW;
    const short = new AdminTokenVerifier(settings({ ADMIN_TOKEN_MAX_AGE_SECONDS: '600' }), keys, () => now);
    assert.equal((await short.verify(await signedToken(key, claims({ iat: NOW_S - 60, exp: NOW_S + 500 })))).ok, true);
    const beyond = await short.verify(await signedToken(key, claims({ iat: NOW_S - 60, exp: NOW_S + 600 })));
    assert.equal(!beyond.ok && beyond.description, TOO_OLD);
    assert.throws(() => settings({ ADMIN_TOKEN_MAX_AGE_SECONDS: '0' }), /ADMIN_TOKEN_MAX_AGE_SECONDS/);
  });

  it('wait for the provider keys: 401 until they are fetched', async () => {
    const { sign } = await fixture();
    const unloaded = new AdminTokenVerifier(settings(), { loaded: false, getKey: createLocalJWKSet({ keys: [] }) }, () => NOW);
    const outcome = await unloaded.verify(await sign(claims()));
    assert.equal(outcome.ok, false);
  });

  it('come in the Authorization header as Bearer; a request without one is left to the next way', async () => {
    const { verifier, sign } = await fixture();
    const bearer = new BearerAuthenticator(verifier, 0);
    assert.equal(await bearer.authenticate(request()), undefined);
    assert.equal((await bearer.authenticate(request(`bearer ${await sign(claims())}`)))?.ok, true, 'the scheme is case-insensitive');
    const basic = await bearer.authenticate(request('Basic dXNlcjpwYXNz'));
    assert.deepEqual(basic, { ok: false, status: 401, error: 'invalid_request', description: 'send the access token as Authorization: Bearer <token>' });
  });

  it('are checked once: a verified token is kept until it expires, and a made-up one costs a check from its address\'s bounded budget', async () => {
    const key = await signingKey('admin-1');
    const jwks = createLocalJWKSet({ keys: [key.publicJwk] });
    let keyLookups = 0;
    let now = NOW;
    const keys: KeySource = { loaded: true, getKey: (...args) => (keyLookups++, jwks(...args)) };
    const verifier = new AdminTokenVerifier(settings(), keys, () => now);
    const mine = await signedToken(key, claims());
    assert.equal((await verifier.verify(mine, now, '192.0.2.1')).ok, true);
    assert.equal((await verifier.verify(mine, now, '192.0.2.1')).ok, true);
    assert.equal(keyLookups, 1, 'a kept token is not checked again');

    // A flood of well-formed made-up tokens from one address: its burst is checked, the rest refused unchecked.
    const { burst } = NEW_TOKEN_CHECKS.perSource;
    const forged = await Promise.all(Array.from({ length: burst + 5 }, (_, i) => signedToken(key, claims({ sub: `x${i}` }), { kid: 'not-published' })));
    const outcomes = [];
    for (const token of forged) outcomes.push(await verifier.verify(token, now, '203.0.113.9'));
    assert.equal(outcomes.filter((outcome) => !outcome.ok && outcome.status === 401).length, burst);
    const refused = outcomes.filter((outcome) => !outcome.ok && outcome.status === 429);
    assert.equal(refused.length, 5);
    assert.match(refused[0] && !refused[0].ok ? refused[0].description : '', /too many new access tokens from this address/);
    assert.equal(keyLookups, burst + 1, 'tokens beyond the budget were checked');
    assert.equal((await verifier.verify(mine, now, '192.0.2.1')).ok, true, 'a kept token still passes while new ones wait');
    assert.equal((await verifier.verify(await signedToken(key, claims({ sub: 'colleague' })), now, '192.0.2.1')).ok, true, "another address's new token is checked");
    assert.equal((await verifier.verify(await signedToken(key, claims({ sub: 'console' })))).ok, true, "the console's own token is checked");

    // A second later there is room for new tokens again; past its exp (and the skew) a kept token is checked again, and refused.
    now += 1_000;
    assert.equal((await verifier.verify(await signedToken(key, claims({ sub: 'after' })), now, '203.0.113.9')).ok, true);
    now = (claims().exp as number) * 1000 + 31_000;
    const expired = await verifier.verify(mine);
    assert.equal(expired.ok, false);
    assert.equal(!expired.ok && expired.status, 401);
  });

  it('refuse junk at once, at no cost to anyone: not a JWT, another alg or typ, another iss or aud, expired', async () => {
    let keyLookups = 0;
    const key = await signingKey('admin-1');
    const jwks = createLocalJWKSet({ keys: [key.publicJwk] });
    const keys: KeySource = { loaded: true, getKey: (...args) => (keyLookups++, jwks(...args)) };
    const verifier = new AdminTokenVerifier(settings(), keys, () => NOW);
    const junk = [
      ...Array.from({ length: 200 }, (_, i) => `x${i}`),
      await signedToken(key, claims({ iss: 'https://elsewhere.example' })),
      await signedToken(key, claims({ aud: 'https://other-api.example' })),
      await signedToken(key, claims({ exp: NOW / 1000 - 3_600 })),
      await signedToken(key, claims(), { typ: 'JWT' }),
    ];
    for (const token of junk) {
      const outcome = await verifier.verify(token, NOW, '203.0.113.9');
      assert.equal(!outcome.ok && outcome.status, 401, token.slice(0, 20));
    }
    assert.equal(keyLookups, 0, 'no key was looked up');
    const staff = await Promise.all(Array.from({ length: NEW_TOKEN_CHECKS.perSource.burst }, (_, i) => signedToken(key, claims({ sub: `staff-${i}` }))));
    for (const token of staff) assert.equal((await verifier.verify(token, NOW, '203.0.113.9')).ok, true, 'the budget of the address is whole');
  });

  it('check a token once while its check is under way: the same token sent again waits for that answer, at no cost', async () => {
    const key = await signingKey('admin-1');
    const jwks = createLocalJWKSet({ keys: [key.publicJwk] });
    let keyLookups = 0;
    const keys: KeySource = { loaded: true, getKey: (...args) => (keyLookups++, jwks(...args)) };
    const verifier = new AdminTokenVerifier(settings(), keys, () => NOW);
    const token = await signedToken(key, claims());
    const outcomes = await Promise.all(Array.from({ length: NEW_TOKEN_CHECKS.perSource.burst * 2 }, () => verifier.verify(token, NOW, '192.0.2.1')));
    assert.ok(outcomes.every((outcome) => outcome.ok));
    assert.equal(keyLookups, 1);
  });
});
