import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KEY_SET_MAX_KEYS, publicKeySet } from '../../src/token/issuer-documents.js';

const RSA_PUBLIC = { kty: 'RSA', kid: 'r1', n: 'AQAB-n', e: 'AQAB', alg: 'RS256', use: 'sig' };

describe('publicKeySet: a key set from the issuer or the database, both hostile', () => {
  const kept: Array<[string, unknown, unknown]> = [
    ['a public RSA key, members in a fixed order', { keys: [RSA_PUBLIC] }, { keys: [{ alg: 'RS256', e: 'AQAB', kid: 'r1', kty: 'RSA', n: 'AQAB-n', use: 'sig' }] }],
    ['an RSA private key, as its public half', { keys: [{ ...RSA_PUBLIC, d: 'x', p: 'x', q: 'x', dp: 'x', dq: 'x', qi: 'x', oth: [] }] }, publicKeySet({ keys: [RSA_PUBLIC] })],
    ['an EC and an OKP private key, without d', { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y', d: 'd' }, { kty: 'OKP', crv: 'Ed25519', x: 'x', d: 'd' }] }, { keys: [{ crv: 'P-256', kty: 'EC', x: 'x', y: 'y' }, { crv: 'Ed25519', kty: 'OKP', x: 'x' }] }],
    ['a shared secret (oct) and entries that are no key, dropped beside a public key', { keys: [{ kty: 'oct', k: 'c2VjcmV0' }, null, 'key', { kid: 'no kty' }, RSA_PUBLIC] }, publicKeySet({ keys: [RSA_PUBLIC] })],
  ];
  for (const [what, input, expected] of kept) it(`keeps ${what}`, () => assert.deepEqual(publicKeySet(input), expected));

  const refused: Array<[string, unknown]> = [
    ['no object', 'keys'],
    ['no keys array', { keys: { kid: 'r1' } }],
    ['only a shared secret', { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }],
    ['an empty set, which would replace the last good one and verify nothing', { keys: [] }],
    ['an array', [RSA_PUBLIC]],
  ];
  for (const [what, input] of refused) it(`refuses ${what}`, () => assert.throws(() => publicKeySet(input), { name: 'KeySetError' }));

  it(`keeps at most ${KEY_SET_MAX_KEYS} keys`, () => {
    const many = Array.from({ length: KEY_SET_MAX_KEYS + 10 }, (_, index) => ({ ...RSA_PUBLIC, kid: `k${index}` }));
    assert.equal(publicKeySet({ keys: many }).keys.length, KEY_SET_MAX_KEYS);
  });
});
