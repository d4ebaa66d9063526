import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../../src/observe/logger.js';
import { issuerKeysOptions } from '../../src/store/token-key-sets.js';
import { tokenKeysAgeSeconds } from '../../src/serve/token-keys.js';
import { tokenSettings } from '../support/jwks-server.js';

const NOW = Date.parse('2026-11-29T12:00:00Z');

describe("the token issuer's keys as serve holds them", () => {
  it('reports their age in seconds since they were fetched, NaN while none is held, never below 0', () => {
    assert.equal(tokenKeysAgeSeconds({ fetchedAt: NOW - 90_500 }, NOW), 90.5);
    assert.equal(tokenKeysAgeSeconds({ fetchedAt: NOW + 5_000 }, NOW), 0);
    assert.ok(Number.isNaN(tokenKeysAgeSeconds({ fetchedAt: undefined }, NOW)));
  });

  it('fetches TOKEN_JWKS_URL when set, else discovers it from TOKEN_ISSUER, each with a stored set of its own', () => {
    const logger = createLogger('silent');
    const pool = { query: async () => ({ rows: [] }) } as unknown as Parameters<typeof issuerKeysOptions>[1];
    const configured = issuerKeysOptions(tokenSettings('https://login.example.com', 'https://api.example.com', 'https://login.example.com/jwks'), pool, logger);
    assert.deepEqual([configured.jwksUrl, configured.issuer, configured.setting], ['https://login.example.com/jwks', undefined, 'TOKEN_JWKS_URL']);
    const discovered = issuerKeysOptions({ ...tokenSettings('https://login.example.com', 'https://api.example.com', 'https://x.example/jwks'), jwksUrl: undefined }, pool, logger);
    assert.deepEqual([discovered.jwksUrl, discovered.issuer, discovered.setting], [undefined, 'https://login.example.com', 'TOKEN_ISSUER']);
    assert.ok(configured.store && discovered.store);
  });
});
