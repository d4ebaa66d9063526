import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { siteKeys, type HashedKey } from '../../src/store/site-keys.js';

const hash = (n: number) => n.toString(16).padStart(64, '0');
const keysNumbered = (count: number): HashedKey[] =>
  Array.from({ length: count }, (_, n) => ({ hash: hash(n), keyId: String(n), expiresAt: n % 2 === 0 ? null : 1_000 * n }));

describe('siteKeys', () => {
  for (const count of [0, 1, 2, 8, 9, 50]) {
    it(`finds each of ${count} keys by its hash, and no other`, () => {
      const keys = siteKeys(keysNumbered(count));
      assert.equal(keys.size, count);
      for (const { hash: keyHash, keyId, expiresAt } of keysNumbered(count)) {
        const found = keys.get(keyHash);
        assert.deepEqual(found && { keyId: found.keyId, expiresAt: found.expiresAt }, { keyId, expiresAt });
      }
      assert.equal(keys.get(hash(count)), undefined);
      assert.equal(keys.get(''), undefined);
      assert.deepEqual([...keys.keys()].sort(), keysNumbered(count).map((key) => key.hash).sort());
    });
  }

  it('finds the last of two keys with one hash, as a Map does, however many keys the site has', () => {
    for (const count of [2, 20]) {
      const keys = keysNumbered(count);
      keys.push({ hash: hash(0), keyId: 'later', expiresAt: 5 });
      assert.equal(siteKeys(keys).get(hash(0))?.keyId, 'later', `${count} keys`);
      assert.equal(siteKeys(keys).get(hash(0))?.keyId, new Map(keys.map((key) => [key.hash, key])).get(hash(0))?.keyId);
    }
  });

  it('gives back each key id and expiry as given: any id, expiries to the fraction of a millisecond, hashes of any length', () => {
    const keys: HashedKey[] = [
      { hash: hash(1), keyId: '9007199254740993', expiresAt: 1_795_000_000_123.456 },
      { hash: hash(2), keyId: 'tab\there', expiresAt: 0 },
      { hash: hash(3), keyId: 'line\nbreak', expiresAt: Number.POSITIVE_INFINITY },
      { hash: 'short', keyId: '', expiresAt: null },
    ];
    const listed: HashedKey[] = [keys[0]!, { hash: hash(5), keyId: '7', expiresAt: 0 }, { hash: hash(6), keyId: '8', expiresAt: -1.5 }];
    for (const held of [keys.slice(0, 1), listed, keys.slice(0, 2), keys.slice(0, 3), keys, [keys[0]!, keys[3]!]]) {
      const byHash = siteKeys(held);
      assert.equal(byHash.size, held.length);
      for (const key of held) {
        const found = byHash.get(key.hash);
        assert.deepEqual(found && [found.keyId, found.expiresAt], [key.keyId, key.expiresAt], key.keyId);
      }
      assert.equal(byHash.get(hash(4)), undefined);
      assert.equal(byHash.get(hash(1).slice(0, 63)), undefined, 'a prefix of a hash finds nothing');
    }
  });
});
