import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashApiKey } from '../../src/decision/api-key.js';

describe('hashApiKey', () => {
  // Digests from coreutils' sha256sum: the database's key_sha256 column holds the same bytes.
  const table: Array<[string, string]> = [
    ['727250dc-209c-45b4-8c25-b9f9173264e5', 'ba62696dcc9ef92e9e7a474e8a3d36ab6cb789ebf7eb46ebf8afdc05165a6329'],
    ['', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
  ];
  for (const [key, digest] of table) {
    it(`is the SHA-256 of "${key}" in lower-case hex`, () => assert.equal(hashApiKey(key), digest));
  }
});
