import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { IncomingMessage } from 'node:http';
import type { ClientIpSource } from '../../src/config.js';
import { claimedClientId, sourceAddress } from '../../src/issuer/issuer-http.js';
import { addressBucket } from '../../src/common/token-buckets.js';
import { TokenEndpointGuard, type Admission } from '../../src/issuer/token-endpoint-guard.js';

const LIMITS = { perAddress: { burst: 3, perSecond: 1 }, perClient: { burst: 2, perSecond: 1 }, failedPerAddress: { burst: 2, perSecond: 0.5 } };

function admitted(admission: Admission): (authenticated: boolean) => void {
  assert.ok(admission.admitted, admission.admitted ? '' : admission.reason);
  return admission.settle;
}

describe('the token endpoint guard', () => {
  it('admits a client up to its burst, then says when to retry, then admits again as time passes', () => {
    const guard = new TokenEndpointGuard(LIMITS);
    admitted(guard.admit('198.51.100.1', 'a', 0))(true);
    admitted(guard.admit('198.51.100.2', 'a', 0))(true);
    const refused = guard.admit('198.51.100.3', 'a', 0);
    assert.deepEqual(refused, { admitted: false, retryAfterSeconds: 1, reason: 'too many token requests for this client' });
    admitted(guard.admit('198.51.100.3', 'a', 1_000))(true);
  });

  it('does not spend a client\'s budget on requests that fail to authenticate: a stranger naming it cannot lock it out', () => {
    const guard = new TokenEndpointGuard({ ...LIMITS, failedPerAddress: { burst: 100, perSecond: 1 } });
    for (let attempt = 0; attempt < 10; attempt++) admitted(guard.admit(`198.51.100.${attempt + 1}`, 'victim', 0))(false);
    admitted(guard.admit('203.0.113.7', 'victim', 0))(true);
  });

  it('counts IPv6 addresses by their /64, so that a client cannot step to a fresh bucket within it', () => {
    assert.equal(addressBucket('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(addressBucket('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(addressBucket('198.51.100.7'), '198.51.100.7');
    const guard = new TokenEndpointGuard(LIMITS);
    for (const host of ['1', '2', '3']) admitted(guard.admit(`2001:db8:1:2::${host}`, undefined, 0))(true);
    assert.equal(guard.admit('2001:db8:1:2::4', undefined, 0).admitted, false);
    admitted(guard.admit('2001:db8:1:3::1', undefined, 0))(true);
  });

  it('limits an address whatever clients it names', () => {
    const guard = new TokenEndpointGuard(LIMITS);
    for (const client of ['a', 'b', 'c']) admitted(guard.admit('198.51.100.1', client, 0))(true);
    const refused = guard.admit('198.51.100.1', 'd', 0);
    assert.equal(refused.admitted, false);
    assert.equal(!refused.admitted && refused.reason, 'too many token requests from this address');
  });

  it('lets an address fail authentication only its failure budget, and gives a reservation back on success', () => {
    const guard = new TokenEndpointGuard({ ...LIMITS, perAddress: { burst: 100, perSecond: 1 }, perClient: { burst: 100, perSecond: 1 } });
    admitted(guard.admit('203.0.113.9', 'a', 0))(true);
    admitted(guard.admit('203.0.113.9', 'a', 0))(false);
    admitted(guard.admit('203.0.113.9', 'a', 0))(false);
    const refused = guard.admit('203.0.113.9', 'a', 0);
    assert.deepEqual(refused, { admitted: false, retryAfterSeconds: 2, reason: 'too many failed client authentications from this address' });
    admitted(guard.admit('203.0.113.10', 'a', 0))(true);
  });

  it('counts reservations still in flight against the failure budget, so a burst of slow bad requests is bounded too', () => {
    const guard = new TokenEndpointGuard({ ...LIMITS, perAddress: { burst: 100, perSecond: 1 }, perClient: { burst: 100, perSecond: 1 } });
    admitted(guard.admit('203.0.113.9', 'a', 0));
    admitted(guard.admit('203.0.113.9', 'a', 0));
    assert.equal(guard.admit('203.0.113.9', 'a', 0).admitted, false);
  });
});

describe('the client a token request claims to be', () => {
  const assertion = (payload: object): string =>
    `${Buffer.from('{"alg":"ES256"}').toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.c2ln`;
  for (const [name, headers, body, expected] of [
    ['the id of a Basic header, form-decoded', { authorization: `Basic ${Buffer.from('partner%2B1:secret').toString('base64')}` }, '', 'partner+1'],
    ['client_id in the body', {}, 'grant_type=client_credentials&client_id=p-1', 'p-1'],
    ['the sub of a client assertion', {}, `client_assertion=${assertion({ sub: 'p-2', iss: 'p-2' })}`, 'p-2'],
    ['nothing from an assertion that is no JWT', {}, 'client_assertion=nonsense', undefined],
    ['nothing at all', {}, 'grant_type=client_credentials', undefined],
    ['at most 255 characters of an id', {}, `client_id=${'x'.repeat(1000)}`, 'x'.repeat(255)],
  ] as const) {
    it(name, () => assert.equal(claimedClientId(headers, body), expected));
  }
});

describe('the source address a token request counts against', () => {
  const request = (headers: Record<string, string>) => ({ headers, socket: { remoteAddress: '::ffff:10.0.0.7' } }) as unknown as IncomingMessage;
  const forwarded = { 'x-forwarded-for': '203.0.113.9, 198.51.100.7' };
  for (const [name, headers, source, expected] of [
    ['the peer, an IPv4-mapped address as IPv4', forwarded, { kind: 'peer' }, '10.0.0.7'],
    ['the entry the gateway appended (0 trusted hops)', forwarded, { kind: 'xff', trustedHops: 0 }, '198.51.100.7'],
    ['the entry one trusted hop further', forwarded, { kind: 'xff', trustedHops: 1 }, '203.0.113.9'],
    ['the peer when X-Forwarded-For has too few entries', forwarded, { kind: 'xff', trustedHops: 2 }, '10.0.0.7'],
    ['the peer when the entry is no address', { 'x-forwarded-for': 'somewhere' }, { kind: 'xff', trustedHops: 0 }, '10.0.0.7'],
    ['a header named by CLIENT_IP_SOURCE', { 'x-real-ip': ' 2001:DB8::1 ' }, { kind: 'header', name: 'x-real-ip' }, '2001:db8::1'],
  ] as const) {
    it(name, () => assert.equal(sourceAddress(request(headers), source as ClientIpSource), expected));
  }
});
