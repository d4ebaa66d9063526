import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Config } from '../../src/config.js';
import { allowNetworks } from '../../src/operations/allowlist-operations.js';
import type { OperationContext } from '../../src/operations/operation-context.js';
import { Refusal } from '../../src/operations/refusal.js';
import { setGrace } from '../../src/operations/site-operations.js';
import { addBrownout, setSunsetPolicy } from '../../src/operations/sunset-operations.js';
import { rollKey } from '../../src/operations/key-operations.js';
import type { CredentialAdmin } from '../../src/store/credential-admin.js';

const NOW = Date.parse('2026-11-29T12:00:00Z');

/** A store that records what reached it: a refused change must reach nothing. */
function recordingContext(): { context: OperationContext; calls: string[] } {
  const calls: string[] = [];
  const record = (name: string, answer: unknown) => async (...args: unknown[]) => {
    calls.push(`${name} ${JSON.stringify(args)}`);
    return answer;
  };
  const admin = {
    allowNetworks: record('allowNetworks', { added: ['0.0.0.0/0'], alreadyAllowed: [] }),
    sunset: {
      setGrace: record('setGrace', { siteId: '1001', graceUntil: null, previous: null }),
      addBrownout: record('addBrownout', {}),
      setPolicy: record('setPolicy', { policy: { sunsetAt: '2020-01-01T00:00:00.000Z', enforce: true, guideUrl: null, source: 'database', updatedAt: null } }),
    },
  } as unknown as CredentialAdmin;
  return { context: { admin, config: {} as Config, now: NOW }, calls };
}

async function refused(work: Promise<unknown>, code: string, field: string | undefined): Promise<Refusal> {
  const error = await work.then(() => undefined, (caught: unknown) => caught);
  assert.ok(error instanceof Refusal, `refused, not ${String(error)}`);
  assert.deepEqual([error.code, error.field], [code, field]);
  assert.doesNotMatch(error.message, /--[a-z]|sitekey-authz/);
  return error;
}

describe('changes refused before they reach the store', () => {
  it('admits every address only when the change confirms it, then warns of it', async () => {
    for (const cidr of ['0.0.0.0/0', '::/0']) {
      const { context, calls } = recordingContext();
      const refusal = await refused(allowNetworks(context, { siteId: '1001', entries: ['203.0.113.0/24', cidr], allowAnyAddress: false }), 'ANY_ADDRESS_UNCONFIRMED', 'entries');
      assert.match(refusal.message, /would admit every address on the internet.*nothing was changed/);
      assert.equal(refusal.confirmedBy, 'allowAnyAddress');
      assert.deepEqual(calls, []);
    }
    const { context, calls } = recordingContext();
    const { warnings } = await allowNetworks(context, { siteId: '1001', entries: ['0.0.0.0/0'], allowAnyAddress: true });
    assert.equal(calls.length, 1);
    assert.deepEqual(warnings, ['0.0.0.0/0 admits every IPv4 address: the allowlist no longer restricts site 1001']);
  });

  it('asks the same second step for networks nearly as wide, which together admit every address', async () => {
    for (const entries of [['0.0.0.0/1', '128.0.0.0/1'], ['::/1', '8000::/1'], ['10.0.0.0/7'], ['2000::/15']]) {
      const { context, calls } = recordingContext();
      const refusal = await refused(allowNetworks(context, { siteId: '1001', entries, allowAnyAddress: false }), 'ANY_ADDRESS_UNCONFIRMED', 'entries');
      assert.match(refusal.message, /would admit a large part of the internet/);
      assert.deepEqual(calls, []);
    }
    const { context, calls } = recordingContext();
    await allowNetworks(context, { siteId: '1001', entries: ['10.0.0.0/8', '2001::/16'], allowAnyAddress: false });
    assert.equal(calls.length, 1, 'a /8 and an IPv6 /16 are a partner network still');
  });

  it("refuses a roll whose old key would outlive the new one, before the store", async () => {
    const { context, calls } = recordingContext();
    await refused(rollKey(context, { siteId: '1001', keyId: '7', oldExpires: '2027-03-01', expires: '2026-12-01', note: undefined }), 'OLD_KEY_OUTLIVES_NEW', 'oldExpires');
    await refused(rollKey(context, { siteId: '1001', keyId: '7', oldExpires: '2026-11-01', expires: undefined, note: undefined }), 'DATE_IN_PAST', 'oldExpires');
    assert.deepEqual(calls, []);
  });

  it('refuses a grace that has already ended, and takes one back whenever asked', async () => {
    const { context, calls } = recordingContext();
    await refused(setGrace(context, { siteId: '1001', until: '2026-11-01' }), 'DATE_IN_PAST', 'until');
    await refused(setGrace(context, { siteId: '1001', until: '2026-11-29T12:00:00Z' }), 'DATE_IN_PAST', 'until');
    assert.deepEqual(calls, []);
    await setGrace(context, { siteId: '1001', until: null });
    await setGrace(context, { siteId: '1001', until: '2027-03-31' });
    assert.equal(calls.length, 2);
  });

  it('refuses a brownout that ends before it starts or has ended, or misses a date', async () => {
    const { context, calls } = recordingContext();
    const request = { sites: undefined, note: undefined, dryRun: false };
    await refused(addBrownout(context, { ...request, from: '2027-01-02', until: '2027-01-01' }), 'UNTIL_NOT_AFTER_FROM', 'until');
    await refused(addBrownout(context, { ...request, from: '2027-01-01', until: '2027-01-01' }), 'UNTIL_NOT_AFTER_FROM', 'until');
    await refused(addBrownout(context, { ...request, from: '2026-11-01', until: '2026-11-02' }), 'DATE_IN_PAST', 'until');
    await refused(addBrownout(context, { ...request, from: 'now', until: undefined }), 'DATE_MISSING', 'until');
    await refused(addBrownout(context, { ...request, from: 'tomorrow', until: '2027-01-01' }), 'DATE_INVALID', 'from');
    await refused(addBrownout(context, { ...request, from: 'now', until: '2027-01-01', sites: ['1001', 'acme'] }), 'SITE_ID_INVALID', 'sites');
    // An empty list is no way to say every site: a script whose list came out empty would brown out everyone.
    await refused(addBrownout(context, { ...request, from: 'now', until: '2027-01-01', sites: [] }), 'SITES_EMPTY', 'sites');
    assert.deepEqual(calls, []);
    await addBrownout(context, { ...request, from: '2026-11-01', until: '2026-12-01' });
    assert.equal(calls.length, 1, 'a brownout that has begun and not ended runs from now on');
  });

  it('takes a sunset in the past, which retires keys at once, and says so', async () => {
    const { context } = recordingContext();
    const { warnings } = await setSunsetPolicy(context, { at: '2020-01-01', enforce: true, guide: undefined });
    assert.match(warnings.join(''), /^the sunset 2020-01-01T00:00:00\.000Z is in the past: API keys are refused \(105\) from now on, except for sites with grace$/);
    await refused(setSunsetPolicy(context, { at: undefined, enforce: undefined, guide: undefined }), 'NOTHING_TO_CHANGE', undefined);
    await refused(setSunsetPolicy(context, { at: undefined, enforce: undefined, guide: 'http://example.com' }), 'GUIDE_INVALID', 'guide');
  });
});
