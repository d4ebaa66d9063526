import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decide } from '../../src/decision/decide.js';
import { denialBody, ERROR_CATALOGUE } from '../../src/decision/error-catalogue.js';
import type { Brownout, CheckInput, Decision, SunsetPolicy } from '../../src/decision/types.js';
import { NO_SUNSET, snapshotOf } from '../support/snapshot.js';

const SUNSET = Date.parse('2026-12-31T23:59:59Z');
const BEFORE = Date.parse('2026-12-01T14:30:00Z');
const AFTER = SUNSET + 1_000;
const KEY = '3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b';
const GRACE_KEY = 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d';
const OTHER_KEY = '0badc0de-1111-4222-8333-444455556666';
const GUIDE = 'https://developers.example.com/tokens';

const brownout = (overrides: Partial<Brownout> = {}): Brownout => ({
  id: '7',
  from: Date.parse('2026-12-01T14:00:00Z'),
  until: Date.parse('2026-12-01T15:00:00Z'),
  siteIds: null,
  dryRun: false,
  ...overrides,
});

const sites = [
  { siteId: '1001', cidrs: ['203.0.113.0/24'], keys: [{ key: KEY, keyId: '11' }] },
  { siteId: '1002', cidrs: ['203.0.113.0/24'], keys: [{ key: GRACE_KEY, keyId: '21' }], graceUntil: Date.parse('2027-03-31T00:00:00Z') },
  { siteId: '1003', cidrs: ['203.0.113.0/24'], keys: [{ key: OTHER_KEY, keyId: '31' }], graceUntil: Date.parse('2026-11-30T00:00:00Z') },
];

function request(site: string, key: string, overrides: Partial<CheckInput> = {}): CheckInput {
  return {
    authorization: `${site}:${key}`,
    clientAddress: '203.0.113.7',
    body: { kind: 'text', text: JSON.stringify({ siteid: Number(site), apikey: key }) },
    bodyPartial: false,
    bodyCredentials: 'required',
    ...overrides,
  };
}

const outcome = (decision: Decision): string =>
  decision.outcome === 'allow'
    ? decision.method === 'api_key' && decision.rehearsal
      ? `allow (rehearsal of ${decision.rehearsal.brownoutId})`
      : 'allow'
    : decision.denial.errorId === 105
      ? `105 ${decision.denial.reason}`
      : String(decision.denial.errorId);

const enforced: SunsetPolicy = { sunsetAt: SUNSET, enforce: true, guideUrl: undefined };

/** Issue #11: 105 only for otherwise valid credentials, during a brownout or after an enforced sunset, never with grace. */
describe('the API-key sunset in decide()', () => {
  const cases: Array<{ name: string; input: CheckInput; brownouts?: Brownout[]; now: number; policy: SunsetPolicy; expect: string }> = [
    { name: 'allows before the sunset when nothing is scheduled', input: request('1001', KEY), now: BEFORE, policy: enforced, expect: 'allow' },
    { name: 'refuses during a brownout of every site', input: request('1001', KEY), brownouts: [brownout()], now: BEFORE, policy: NO_SUNSET, expect: '105 brownout' },
    { name: 'refuses during a brownout naming the site', input: request('1001', KEY), brownouts: [brownout({ siteIds: new Set(['1001']) })], now: BEFORE, policy: NO_SUNSET, expect: '105 brownout' },
    { name: 'allows a site a brownout does not name', input: request('1001', KEY), brownouts: [brownout({ siteIds: new Set(['1002']) })], now: BEFORE, policy: NO_SUNSET, expect: 'allow' },
    { name: 'allows before a brownout starts', input: request('1001', KEY), brownouts: [brownout()], now: Date.parse('2026-12-01T13:59:59.999Z'), policy: NO_SUNSET, expect: 'allow' },
    { name: 'allows once a brownout has ended', input: request('1001', KEY), brownouts: [brownout()], now: Date.parse('2026-12-01T15:00:00Z'), policy: NO_SUNSET, expect: 'allow' },
    { name: 'lets a site with grace through a brownout', input: request('1002', GRACE_KEY), brownouts: [brownout()], now: BEFORE, policy: NO_SUNSET, expect: 'allow' },
    { name: 'refuses a site whose grace is over', input: request('1003', OTHER_KEY), brownouts: [brownout()], now: BEFORE, policy: NO_SUNSET, expect: '105 brownout' },
    { name: 'a dry-run brownout refuses nobody but marks the rehearsal', input: request('1001', KEY), brownouts: [brownout({ dryRun: true })], now: BEFORE, policy: NO_SUNSET, expect: 'allow (rehearsal of 7)' },
    { name: 'a real brownout wins over a dry run at the same time', input: request('1001', KEY), brownouts: [brownout({ dryRun: true, id: '6' }), brownout()], now: BEFORE, policy: NO_SUNSET, expect: '105 brownout' },
    { name: 'a dry run does not rehearse a site with grace', input: request('1002', GRACE_KEY), brownouts: [brownout({ dryRun: true })], now: BEFORE, policy: NO_SUNSET, expect: 'allow' },
    { name: 'refuses after the sunset with enforcement on', input: request('1001', KEY), now: AFTER, policy: enforced, expect: '105 retired' },
    { name: 'allows after the sunset with enforcement off', input: request('1001', KEY), now: AFTER, policy: NO_SUNSET, expect: 'allow' },
    { name: 'allows at the last instant before the sunset', input: request('1001', KEY), now: SUNSET - 1, policy: enforced, expect: 'allow' },
    { name: 'refuses at the very instant of the sunset', input: request('1001', KEY), now: SUNSET, policy: enforced, expect: '105 retired' },
    { name: 'lets a site through at the last instant of its grace', input: request('1002', GRACE_KEY), now: Date.parse('2027-03-31T00:00:00Z') - 1, policy: enforced, expect: 'allow' },
    { name: 'refuses a site at the very instant its grace ends', input: request('1002', GRACE_KEY), now: Date.parse('2027-03-31T00:00:00Z'), policy: enforced, expect: '105 retired' },
    { name: 'refuses at the very instant a brownout starts', input: request('1001', KEY), brownouts: [brownout()], now: Date.parse('2026-12-01T14:00:00Z'), policy: NO_SUNSET, expect: '105 brownout' },
    { name: 'allows a site with grace after the enforced sunset', input: request('1002', GRACE_KEY), now: AFTER, policy: enforced, expect: 'allow' },
    { name: 'keeps 108 for a bad header after the sunset', input: request('1001', 'not-a-key'), now: AFTER, policy: enforced, expect: '108' },
    { name: 'keeps 101 for an unknown site during a brownout', input: request('4242', KEY), brownouts: [brownout()], now: BEFORE, policy: NO_SUNSET, expect: '101' },
    { name: 'keeps 103 outside the allowlist after the sunset', input: request('1001', KEY, { clientAddress: '198.51.100.9' }), now: AFTER, policy: enforced, expect: '103' },
    { name: 'keeps 102 for a wrong key during a brownout', input: request('1001', OTHER_KEY), brownouts: [brownout()], now: BEFORE, policy: NO_SUNSET, expect: '102' },
    { name: 'keeps 104 for a wrong body after the sunset', input: request('1001', KEY, { body: { kind: 'text', text: '{"siteid":1001}' } }), now: AFTER, policy: enforced, expect: '104' },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.equal(outcome(decide(c.input, snapshotOf(sites, c.brownouts ?? []), c.now, c.policy)), c.expect);
    });
  }

  it('tells the partner what is happening, until when, and where to go', () => {
    const during = decide(request('1001', KEY), snapshotOf(sites, [brownout()]), BEFORE, { ...NO_SUNSET, guideUrl: GUIDE });
    assert.equal(during.outcome, 'deny');
    if (during.outcome !== 'deny') return;
    assert.equal(
      denialBody(during.denial),
      JSON.stringify({
        error: {
          id: 105,
          message:
            'API key authentication is switched off until 2026-12-01T15:00:00Z for a scheduled brownout ahead of its retirement on 2026-12-31; ' +
            `migrate to token-based authentication; migration guide: ${GUIDE}`,
        },
      }),
    );
    const retired = decide(request('1001', KEY), snapshotOf(sites), AFTER, enforced);
    assert.ok(retired.outcome === 'deny');
    if (retired.outcome !== 'deny') return;
    assert.equal(denialBody(retired.denial), '{"error":{"id":105,"message":"API key authentication has been retired; use token-based authentication"}}');
    assert.doesNotMatch(denialBody(retired.denial), new RegExp(KEY));
    assert.equal(ERROR_CATALOGUE[105].httpStatus, 401);
  });
});
