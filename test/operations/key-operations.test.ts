import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keySunsetWarnings, oldExpiresOf, ROLL_OVERLAP_DAYS, SUNSET_WARNING_DAYS } from '../../src/operations/key-operations.js';
import type { Refusal } from '../../src/operations/refusal.js';

const DAY_MS = 86_400_000;
const SUNSET = Date.parse('2026-12-31T23:59:59Z');
const enforced = { sunsetAt: SUNSET, enforce: true };

describe('a key made near the API-key sunset', () => {
  it('warns of a key with no expiry, or one after the sunset, within 60 days of it, naming the date', () => {
    const now = SUNSET - 32 * DAY_MS;
    for (const expires of [undefined, new Date(SUNSET + DAY_MS)]) {
      const [warning, ...more] = keySunsetWarnings(expires, enforced, now);
      assert.deepEqual(more, []);
      assert.match(warning ?? '', /stops working at the API-key sunset on 2026-12-31T23:59:59\.000Z, in 32 day\(s\)/);
      assert.doesNotMatch(warning ?? '', /--|sitekey-authz/);
    }
  });

  it('says nothing of a key that expires by the sunset, or of one made long before it', () => {
    assert.deepEqual(keySunsetWarnings(new Date(SUNSET), enforced, SUNSET - 10 * DAY_MS), []);
    assert.deepEqual(keySunsetWarnings(undefined, enforced, SUNSET - (SUNSET_WARNING_DAYS + 1) * DAY_MS), []);
  });

  it('warns from the sixtieth day on, after the sunset too, and says when it is not enforced yet', () => {
    assert.equal(keySunsetWarnings(undefined, enforced, SUNSET - SUNSET_WARNING_DAYS * DAY_MS).length, 1);
    assert.match(keySunsetWarnings(undefined, enforced, SUNSET + DAY_MS)[0] ?? '', /since the API-key sunset on 2026-12-31T23:59:59\.000Z, which has passed/);
    assert.match(keySunsetWarnings(undefined, { sunsetAt: SUNSET, enforce: false }, SUNSET - DAY_MS)[0] ?? '', /once the sunset is enforced/);
  });
});

describe("a rolled key's last day", () => {
  const NOW = Date.parse('2026-11-23T12:00:00Z');
  const refusal = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      return error as Refusal;
    }
    assert.fail('not refused');
  };

  it('is a week from now by default, or the date given', () => {
    assert.equal(oldExpiresOf(undefined, NOW).toISOString(), '2026-11-30T12:00:00.000Z');
    assert.equal(ROLL_OVERLAP_DAYS, 7);
    assert.equal(oldExpiresOf('2026-12-01', NOW).toISOString(), '2026-12-01T00:00:00.000Z');
  });

  it('is refused in the past or when it is no date, naming the field in words', () => {
    const past = refusal(() => oldExpiresOf('2026-11-23', NOW));
    assert.deepEqual([past.code, past.field], ['DATE_IN_PAST', 'oldExpires']);
    assert.match(past.message, /^the old key's last day: 2026-11-23 is in the past/);
    const garbled = refusal(() => oldExpiresOf('next week', NOW));
    assert.deepEqual([garbled.code, garbled.field], ['DATE_INVALID', 'oldExpires']);
    assert.doesNotMatch(past.message + garbled.message, /--|sitekey-authz/);
  });
});
