import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkPolicies } from '../../src/envoy/check-policies.js';
import { FollowedCheckPolicies, sunsetDisagreements } from '../../src/serve/check-policies.js';
import { loadConfig } from '../../src/config.js';
import { loggedLines } from '../support/logged-lines.js';

const GUIDE = 'https://developers.example.com/tokens';
const stored = (sunsetAt: string, enforce: boolean, guideUrl?: string) => ({ sunsetAt: Date.parse(sunsetAt), enforce, guideUrl });

const warnings = () => loggedLines('warn');

describe('the check policies follow the sunset policy in the database', () => {
  it('compare only the variables the environment set', () => {
    const config = loadConfig({ APIKEY_SUNSET_AT: '2026-11-01T00:00:00Z', APIKEY_SUNSET_ENFORCE: 'true' });
    assert.deepEqual(sunsetDisagreements(config, stored('2026-11-01T00:00:00Z', true, GUIDE)), [], 'MIGRATION_GUIDE_URL was not set');
    assert.deepEqual(sunsetDisagreements(config, stored('2027-06-30T00:00:00Z', false)), ['APIKEY_SUNSET_AT', 'APIKEY_SUNSET_ENFORCE']);
    assert.deepEqual(sunsetDisagreements(loadConfig({}), stored('2027-06-30T00:00:00Z', true)), [], 'defaults disagree with nothing');
  });

  it('send the database sunset in the headers, and a deprecation never after it', () => {
    const headers = (env: Record<string, string>, sunsetAt: string) =>
      checkPolicies(loadConfig(env), stored(sunsetAt, false)).allowedResponse.responseHeaders.map(({ header }) => `${header?.key}: ${header?.value}`);
    assert.deepEqual(headers({}, '2027-06-30T00:00:00Z'), ['deprecation: @1814313600', 'sunset: Wed, 30 Jun 2027 00:00:00 GMT']);
    assert.deepEqual(headers({ APIKEY_DEPRECATED_AT: '2026-06-01T00:00:00Z' }, '2027-06-30T00:00:00Z')[0], 'deprecation: @1780272000');
    assert.deepEqual(headers({ APIKEY_DEPRECATED_AT: '2026-06-01T00:00:00Z' }, '2026-01-01T00:00:00Z')[0], 'deprecation: @1767225600', 'clamped to the sunset');
  });

  it('follow the database, saying once per stored policy that the environment disagrees', () => {
    const { lines, logger } = warnings();
    const followed = new FollowedCheckPolicies(loadConfig({ APIKEY_SUNSET_ENFORCE: 'true' }), logger);
    assert.equal(followed.of(undefined).sunset.enforce, true, 'none stored: the environment');
    assert.equal(followed.of(stored('2026-12-31T23:59:59Z', true)).sunset.enforce, true);
    assert.equal(lines.length, 0, 'it agrees');
    for (let i = 0; i < 3; i++) assert.equal(followed.of(stored('2026-12-31T23:59:59Z', false)).sunset.enforce, false);
    assert.equal(lines.length, 1);
    assert.deepEqual(lines[0]?.variables, ['APIKEY_SUNSET_ENFORCE']);
    const same = stored('2027-01-31T00:00:00Z', false);
    assert.equal(followed.of(same), followed.of(same), 'the same policies while the stored one does not change');
    assert.equal(lines.length, 2, 'a new stored value that still disagrees is said once more');
    assert.equal(followed.of(undefined).sunset.sunsetAt, Date.parse('2027-01-31T00:00:00Z'), 'a row gone: the last one stored');
  });
});
