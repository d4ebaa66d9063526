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
});
