import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { actorWords, auditSentence, instantWords } from '../../src/operations/audit-sentences.js';
import type { AuditEntry } from '../../src/store/audit-log.js';

const AT = '2026-11-29T10:14:07.000Z';
const entry = (action: string, details: unknown, siteId: string | null = '1001', siteName: string | null = 'Acme'): AuditEntry => ({
  id: '1',
  at: AT,
  actor: 'alice@example.com',
  actorKind: 'cli',
  actorSubject: 'alice@example.com',
  actorEmail: null,
  action,
  siteId,
  siteName,
  details,
});

describe('auditSentence: who did what to which site, before and after, when', () => {
  const cases: ReadonlyArray<readonly [string, AuditEntry, string]> = [
    ['a switch to tokens only', entry('site.auth', { authMethod: 'tokens', previous: 'both' }), 'CLI user alice@example.com switched site 1001 (Acme) from API keys and tokens to tokens only — 29 Nov 2026 10:14 UTC'],
    ['a disabled site, with before and after', entry('site.disable', { before: { enabled: true }, after: { enabled: false } }), 'CLI user alice@example.com disabled site 1001 (Acme) (from enabled to disabled) — 29 Nov 2026 10:14 UTC'],
    ['an old disable without them', entry('site.disable', {}), 'CLI user alice@example.com disabled site 1001 (Acme) — 29 Nov 2026 10:14 UTC'],
    [
      'a revoked key',
      entry('key.revoke', { keyId: '7', maskedKey: '*****abcde', before: { status: 'active' }, after: { status: 'revoked' } }),
      'CLI user alice@example.com revoked key 7 (*****abcde) of site 1001 (Acme) (from active to revoked) — 29 Nov 2026 10:14 UTC',
    ],
    [
      'a rolled key',
      entry('key.roll', { keyId: '8', maskedKey: '*****fghij', expiresAt: null, note: 'rolled', replaced: { keyId: '7', maskedKey: '*****abcde', expiresAt: '2026-12-06T10:14:07.000Z' } }),
      'CLI user alice@example.com rolled key 7 (*****abcde) of site 1001 (Acme): issued key 8 (*****fghij), without expiry; the old key works until 6 Dec 2026 10:14 UTC — 29 Nov 2026 10:14 UTC',
    ],
    [
      'an address added',
      entry('ip.allow', { cidrs: ['203.0.113.0/24'], before: { entries: 1 }, after: { entries: 2 } }),
      "CLI user alice@example.com added 203.0.113.0/24 to site 1001 (Acme)'s allowlist (from 1 entry to 2 entries) — 29 Nov 2026 10:14 UTC",
    ],
    ['an old address removal', entry('ip.revoke', { cidrs: ['198.51.100.7/32'] }), "CLI user alice@example.com removed 198.51.100.7/32 from site 1001 (Acme)'s allowlist — 29 Nov 2026 10:14 UTC"],
    [
      'a grace',
      entry('site.grace', { graceUntil: '2027-03-31T00:00:00.000Z', previous: null }),
      'CLI user alice@example.com gave site 1001 (Acme) a grace for API keys until 31 Mar 2027 00:00 UTC (before: none) — 29 Nov 2026 10:14 UTC',
    ],
    [
      'the sunset',
      entry('sunset.set', { policy: { sunsetAt: '2026-12-31T23:59:59.000Z', enforce: true, guideUrl: null }, previous: { sunsetAt: '2026-12-31T23:59:59.000Z', enforce: false, guideUrl: null } }, null, null),
      'CLI user alice@example.com changed the API-key sunset from 31 Dec 2026 23:59 UTC, not enforced, no migration guide to 31 Dec 2026 23:59 UTC, enforced, no migration guide — 29 Nov 2026 10:14 UTC',
    ],
    [
      'a brownout',
      entry('brownout.add', { brownoutId: '3', from: '2026-12-01T14:00:00.000Z', until: '2026-12-01T15:00:00.000Z', siteIds: null, dryRun: false }, null, null),
      'CLI user alice@example.com scheduled brownout 3 for every site from 1 Dec 2026 14:00 UTC until 1 Dec 2026 15:00 UTC — 29 Nov 2026 10:14 UTC',
    ],
    ['a client removed', entry('token-client.remove', { clientId: 'acme-app' }), 'CLI user alice@example.com removed token client acme-app from site 1001 (Acme) — 29 Nov 2026 10:14 UTC'],
    ['a site that is gone', entry('site.add', { name: 'Acme' }, '1001', null), 'CLI user alice@example.com added site 1001 — 29 Nov 2026 10:14 UTC'],
    ['an action it does not know', entry('key.shred', { keyId: '9' }), 'CLI user alice@example.com made the change key.shred to site 1001 (Acme) — 29 Nov 2026 10:14 UTC'],
  ];
  for (const [what, given, sentence] of cases) {
    it(`says ${what}`, () => assert.equal(auditSentence(given), sentence));
  }

  it('survives details written by hand: not an object, fields of the wrong type', () => {
    for (const details of [null, 'text', [1, 2], { before: 'x', after: 3 }, { authMethod: { evil: true } }, { cidrs: 'not a list' }]) {
      for (const action of ['site.auth', 'ip.allow', 'site.enable', 'brownout.add', 'sunset.set', 'key.revoke', 'key.roll']) {
        assert.match(auditSentence(entry(action, details)), /^CLI user alice@example\.com .+ — 29 Nov 2026 10:14 UTC$/);
      }
    }
  });

  it('names who acted with the subject and the verified e-mail apart, so no text can pose as another person', () => {
    const cases: ReadonlyArray<readonly [string, Parameters<typeof actorWords>[0], string]> = [
      ['a person with a verified e-mail', { actor: 'x', actorKind: 'admin-token', actorSubject: '248289761002', actorEmail: 'manager@example.test' }, 'manager@example.test (sub 248289761002)'],
      ['a person without one, whatever the old text said', { actor: 'admin@example.test (sub a-1003) (sub mallory-6)', actorKind: 'admin-token', actorSubject: 'mallory-6', actorEmail: null }, 'sub mallory-6'],
      ['the CLI, a name nobody vouches for', { actor: 'admin@example.test (sub a-1003)', actorKind: 'cli', actorSubject: 'admin@example.test (sub a-1003)', actorEmail: null }, 'CLI user admin@example.test (sub a-1003)'],
      ['an entry from before the parts, in quotes as recorded', { actor: 'dave@example.com', actorKind: null, actorSubject: null, actorEmail: null }, '"dave@example.com"'],
      ['an old entry whose text holds a quote, which cannot close the quotes early', { actor: 'x" edited by "boss@example.test', actorKind: null, actorSubject: null, actorEmail: null }, '"x\\" edited by \\"boss@example.test"'],
    ];
    for (const [what, actor, words] of cases) assert.equal(actorWords(actor), words, what);
  });

  it('writes instants with the month in letters, and an endless date as never', () => {
    assert.equal(instantWords('2027-03-04T05:06:00Z'), '4 Mar 2027 05:06 UTC');
    assert.equal(instantWords('infinity'), 'never');
    assert.equal(instantWords('not a date'), 'not a date');
  });
});
