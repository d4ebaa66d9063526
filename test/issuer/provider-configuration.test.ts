import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newClientId, newClientSecret } from '../../src/issuer/provider-configuration.js';

describe("the issuer's client ids and secrets", () => {
  it('makes client ids a person can type after a command: never starting with a dash or an underscore, 128 random bits', () => {
    const ids = Array.from({ length: 2_000 }, () => newClientId());
    assert.deepEqual(ids.filter((id) => !/^[A-Za-z0-9][A-Za-z0-9_-]{22}$/.test(id)), []);
    assert.equal(new Set(ids).size, ids.length);
  });

  it('makes secrets of 256 random bits', () => {
    assert.match(newClientSecret(), /^[A-Za-z0-9_-]{43}$/);
  });
});
