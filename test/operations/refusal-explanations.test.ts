import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { explainRefusal, siteStandingNotes, type CountedRefusal, type RefusalContext } from '../../src/operations/refusal-explanations.js';
import type { SiteStanding } from '../../src/store/refusal-facts.js';

const ALICE = { id: '41', at: '2026-11-28T09:30:00.000Z', actor: 'alice@example.com', actorKind: 'cli', actorSubject: 'alice@example.com', actorEmail: null } as const;
const site: SiteStanding = {
  siteId: '1001',
  name: 'Acme',
  enabled: true,
  authMethod: 'both',
  allowlist: ['198.51.100.0/24'],
  graceUntil: null,
  tokensNotBefore: null,
  clients: ['acme-app'],
  latest: {},
  endedKeys: [],
  brownouts: [],
};
const context = (overrides: Partial<SiteStanding> = {}, more: Partial<RefusalContext> = {}): RefusalContext => ({
  site: { ...site, ...overrides },
  client: undefined,
  sunsetAt: '2026-12-31T23:59:59.000Z',
  audience: 'https://partner-api.example.com',
  ...more,
});
const refusal = (overrides: Partial<CountedRefusal>): CountedRefusal => ({
  errorId: 103,
  siteId: '1001',
  clientIp: '203.0.113.9',
  clientId: null,
  rule: null,
  signed: null,
  rehearsal: false,
  shadow: false,
  moreAddresses: 0,
  lastSeen: '2026-11-29T10:00:00.000Z',
  ...overrides,
});

describe('explainRefusal: why a partner was refused, what next, and the change behind it', () => {
  it('103: the address, the allowlist, and to add the address', () => {
    const words = explainRefusal(refusal({}), context());
    assert.equal(words.reason, "address 203.0.113.9 is not on site 1001 (Acme)'s allowlist (198.51.100.0/24)");
    assert.equal(words.nextStep, "if 203.0.113.9 is the partner's, add 203.0.113.9 (or its network) to the site's allowlist");
    assert.deepEqual(words.audit, { action: 'ip', siteId: '1001' });
  });

  it('103: an address removed from the allowlist names who removed addresses and when', () => {
    const words = explainRefusal(refusal({}), context({ latest: { 'ip.revoke': { ...ALICE, action: 'ip.revoke' } } }));
    assert.match(words.reason, /addresses were last removed on 28 Nov 2026 09:30 UTC by CLI user alice@example\.com$/);
    assert.deepEqual(words.audit, { action: 'ip.revoke', siteId: '1001' });
  });

  it('102: the key revoked, when and by whom, and to issue a new key', () => {
    const endedKeys = [{ keyId: '7', maskedKey: '*****abcde', revokedAt: ALICE.at, expiresAt: null, revocation: { ...ALICE, action: 'key.revoke' } }];
    const words = explainRefusal(refusal({ errorId: 102 }), context({ endedKeys }));
    assert.match(words.reason, /key 7 \(\*\*\*\*\*abcde\) was revoked on 28 Nov 2026 09:30 UTC by CLI user alice@example\.com/);
    assert.match(words.nextStep, /issue them a new key/);
    assert.deepEqual(words.audit, { action: 'key.revoke', siteId: '1001' });
    assert.match(explainRefusal(refusal({ errorId: 102 }), context()).reason, /no key of site 1001 \(Acme\): a typo/);
  });

  it('101 and 105: a disabled site, a site on tokens only, a brownout, the sunset', () => {
    const disabled = explainRefusal(refusal({ errorId: 101 }), context({ enabled: false, latest: { 'site.disable': { ...ALICE, action: 'site.disable' } } }));
    assert.equal(disabled.reason, 'site 1001 (Acme) was disabled on 28 Nov 2026 09:30 UTC by CLI user alice@example.com: every request of it is refused (101)');
    assert.deepEqual(disabled.audit, { action: 'site.disable', siteId: '1001' });
    const tokensOnly = explainRefusal(refusal({ errorId: 105 }), context({ authMethod: 'tokens', latest: { 'site.auth': { ...ALICE, action: 'site.auth' } } }));
    assert.match(tokensOnly.reason, /accepts access tokens only since 28 Nov 2026 09:30 UTC \(switched by CLI user alice@example\.com\)/);
    assert.deepEqual(tokensOnly.audit, { action: 'site.auth', siteId: '1001' });
    const brownouts = [{ brownoutId: '3', from: '2026-11-29T09:00:00.000Z', until: '2026-11-29T11:00:00.000Z', dryRun: false }];
    const brownout = explainRefusal(refusal({ errorId: 105 }), context({ brownouts }));
    assert.match(brownout.reason, /^brownout 3 switches API keys off from 29 Nov 2026 09:00 UTC until 29 Nov 2026 11:00 UTC/);
    assert.deepEqual(brownout.audit, { action: 'brownout', siteId: null });
    assert.match(explainRefusal(refusal({ errorId: 105 }), context()).reason, /^API keys were retired on 31 Dec 2026 23:59 UTC and the site has no grace/);
  });

  it('106: the rule in the partner-facing words, with the resource to ask for; an unsigned client id is said to be only a claim', () => {
    const expired = explainRefusal(refusal({ errorId: 106, clientIp: null, clientId: 'acme-app', rule: 'expired', signed: true }), context());
    assert.equal(expired.reason, "client acme-app's access token was refused: the token has expired; request a new one");
    assert.match(expired.nextStep, /request a new token/);
    const audience = explainRefusal(refusal({ errorId: 106, clientIp: null, clientId: 'acme-app', rule: 'audience', signed: true }), context());
    assert.match(audience.reason, /resource=https:\/\/partner-api\.example\.com/);
    const forged = explainRefusal(refusal({ errorId: 106, clientIp: null, clientId: 'acme-app', rule: 'signature', signed: false }), context());
    assert.match(forged.reason, /signature did not verify, so "acme-app" is only what the token claimed/);
    const keys = explainRefusal(refusal({ errorId: 106, clientIp: null, clientId: 'acme-app', rule: 'keys-unavailable', signed: false }), context());
    assert.match(keys.nextStep, /nothing is wrong with the partner's token/);
  });

  it('107: the client registered nowhere, who removed it, and to register it', () => {
    const removal = { ...ALICE, action: 'token-client.remove', siteId: '1001' };
    const words = explainRefusal(refusal({ errorId: 107, siteId: null, clientIp: null, clientId: 'acme-old', signed: true }), context({}, { site: undefined, client: { clientId: 'acme-old', siteId: null, removal } }));
    assert.equal(words.reason, 'client acme-old is not registered for any site: it was removed from site 1001 on 28 Nov 2026 09:30 UTC by CLI user alice@example.com');
    assert.match(words.nextStep, /register it for their site/);
    assert.deepEqual(words.audit, { action: 'token-client.remove', siteId: '1001' });
  });

  it('says a shadow count was let through', () => {
    assert.match(explainRefusal(refusal({ shadow: true }), context()).reason, /shadow mode let these requests through/);
  });

  it("notes what refuses a site's partner whatever they send", () => {
    const notes = siteStandingNotes({ ...site, enabled: false, authMethod: 'tokens', allowlist: [] });
    assert.deepEqual(notes.map((note) => note.audit?.action), ['site.disable', 'site.auth', 'ip']);
    assert.deepEqual(siteStandingNotes(site), []);
  });
});
