import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { createLocalJWKSet, type JWTPayload } from 'jose';
import { AdminTokenVerifier, BearerAuthenticator, NEW_TOKEN_CHECKS } from '../../src/admin/admin-token.js';
import { requestSource } from '../../src/admin/request-source.js';
import { loadConfig } from '../../src/config.js';
import type { KeySource } from '../../src/token/issuer-keys.js';
import { signedToken, signingKey } from '../support/jwks-server.js';

const INGRESS = '10.42.0.7';
const request = (peer: string | undefined, headers: Record<string, string | string[]> = {}, authorization?: string) =>
  ({ socket: { remoteAddress: peer }, headers: { ...headers, ...(authorization === undefined ? {} : { authorization }) } }) as unknown as IncomingMessage;

describe('requestSource: whom the admin port\'s per-address budgets count a request against', () => {
  const cases: ReadonlyArray<readonly [string, IncomingMessage, number, string]> = [
    ['the peer without trusted hops, whatever X-Forwarded-For says', request(INGRESS, { 'x-forwarded-for': '198.51.100.1' }), 0, INGRESS],
    ['behind one ingress, the address it appended', request(INGRESS, { 'x-forwarded-for': '198.51.100.1' }), 1, '198.51.100.1'],
    ['entries a client wrote before it are never read', request(INGRESS, { 'x-forwarded-for': '203.0.113.5, 192.0.2.99, 198.51.100.1' }), 1, '198.51.100.1'],
    ['behind a load balancer and the ingress, the address the outermost saw', request(INGRESS, { 'x-forwarded-for': '203.0.113.5, 198.51.100.1, 10.0.0.9' }), 2, '198.51.100.1'],
    ['two headers read as one list, in order', request(INGRESS, { 'x-forwarded-for': ['203.0.113.5', '198.51.100.1'] }), 1, '198.51.100.1'],
    ['an IPv6 client by its /64', request(INGRESS, { 'x-forwarded-for': '2001:DB8:1:2:aaaa::1' }), 1, '2001:db8:1:2::/64'],
    ['an IPv4-mapped client as IPv4', request(INGRESS, { 'x-forwarded-for': '::ffff:198.51.100.1' }), 1, '198.51.100.1'],
    ['no header: the peer', request(INGRESS), 1, INGRESS],
    ['fewer entries than trusted hops: the peer', request(INGRESS, { 'x-forwarded-for': '198.51.100.1' }), 3, INGRESS],
    ['an entry that is no address: the peer', request(INGRESS, { 'x-forwarded-for': '198.51.100.1, unknown' }), 1, INGRESS],
    ['an empty entry: the peer', request(INGRESS, { 'x-forwarded-for': '198.51.100.1, ' }), 1, INGRESS],
    ['an IPv6 peer by its /64', request('2001:db8:9:9::5', {}), 0, '2001:db8:9:9::/64'],
  ];
  for (const [what, given, hops, source] of cases) it(what, () => assert.equal(requestSource(given, hops), source));
});

describe('new admin tokens behind an ingress (ADMIN_XFF_TRUSTED_HOPS=1)', () => {
  const ISSUER = 'https://login.corp.example/realms/staff';
  const AUDIENCE = 'https://authz-admin.corp.example';
  const NOW = Date.parse('2026-11-24T10:00:00Z');
  const claims = (overrides: JWTPayload = {}): JWTPayload => ({ iss: ISSUER, aud: AUDIENCE, sub: 'staff', roles: ['viewer'], iat: NOW / 1000 - 60, exp: NOW / 1000 + 300, ...overrides });

  it('spend only the budget of the client the ingress names: a stranger forging X-Forwarded-For poses as no one else, staff are checked', async () => {
    const settings = loadConfig({ ADMIN_ISSUER: ISSUER, ADMIN_AUDIENCE: AUDIENCE, ADMIN_XFF_TRUSTED_HOPS: '1' }).admin;
    assert.ok(settings);
    assert.equal(settings.xffTrustedHops, 1);
    const key = await signingKey('admin-1');
    const keys: KeySource = { loaded: true, getKey: createLocalJWKSet({ keys: [key.publicJwk] }) };
    const bearer = new BearerAuthenticator(new AdminTokenVerifier(settings, keys, () => NOW), settings.xffTrustedHops);
    const { burst } = NEW_TOKEN_CHECKS.perSource;

    // A stranger at 203.0.113.66 sends well-formed made-up tokens, each with another forged X-Forwarded-For in front of the ingress's entry.
    const statuses: number[] = [];
    for (let i = 0; i < burst + 10; i++) {
      const forged = await signedToken(key, claims({ sub: `x${i}` }), { kid: 'not-published' });
      const outcome = await bearer.authenticate(request(INGRESS, { 'x-forwarded-for': `192.0.2.${i}, 203.0.113.66` }, `Bearer ${forged}`));
      statuses.push(outcome !== undefined && !outcome.ok ? outcome.status : 200);
    }
    assert.deepEqual(statuses.filter((status) => status === 429).length, 10, 'beyond his own burst, whatever he wrote in front');
    assert.ok(statuses.slice(0, burst).every((status) => status === 401));

    // Staff behind the same ingress each have their own budget: all of them are checked and let in.
    for (let i = 0; i < 12; i++) {
      const token = await signedToken(key, claims({ sub: `staff-${i}` }));
      const outcome = await bearer.authenticate(request(INGRESS, { 'x-forwarded-for': `198.51.100.${i}` }, `Bearer ${token}`));
      assert.equal(outcome?.ok, true, `staff ${i}`);
    }
    // Without the setting (0, the default), the same flood spends the ingress's budget, which the staff behind it share.
    const unset = loadConfig({ ADMIN_ISSUER: ISSUER, ADMIN_AUDIENCE: AUDIENCE }).admin;
    assert.ok(unset);
    assert.equal(unset.xffTrustedHops, 0);
    const byPeer = new BearerAuthenticator(new AdminTokenVerifier(unset, keys, () => NOW), unset.xffTrustedHops);
    for (let i = 0; i < burst; i++) {
      await byPeer.authenticate(request(INGRESS, { 'x-forwarded-for': '203.0.113.66' }, `Bearer ${await signedToken(key, claims({ sub: `y${i}` }), { kid: 'not-published' })}`));
    }
    const staff = await byPeer.authenticate(request(INGRESS, { 'x-forwarded-for': '198.51.100.1' }, `Bearer ${await signedToken(key, claims({ sub: 'staff-late' }))}`));
    assert.equal(staff !== undefined && !staff.ok && staff.status, 429, 'counted as the ingress, one stranger');
  });

  it('refuse a number of hops that is no count from 0 to 64, naming the setting', () => {
    for (const value of ['-1', '65', 'one']) assert.throws(() => loadConfig({ ADMIN_ISSUER: ISSUER, ADMIN_AUDIENCE: AUDIENCE, ADMIN_XFF_TRUSTED_HOPS: value }), /ADMIN_XFF_TRUSTED_HOPS/);
  });
});
