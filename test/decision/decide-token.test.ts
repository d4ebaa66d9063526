import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decide } from '../../src/decision/decide.js';
import { denialBody, denialChallenge, ERROR_CATALOGUE } from '../../src/decision/error-catalogue.js';
import { TOKEN_RULE_DESCRIPTIONS, tokenRuleDescription } from '../../src/decision/rule-words.js';
import type { BodyView, CheckInput, Decision, SunsetPolicy, TokenRule, TokenVerdict } from '../../src/decision/types.js';
import { NO_SUNSET, snapshotOf } from '../support/snapshot.js';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const KEY = '3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b';
const TOKENS_ONLY_KEY = '7c7c7c7c-0000-4000-8000-000000000007';
const REVOKED_AT = NOW - 60_000;
const REGISTERED_AT = NOW - 30_000;

const snapshot = snapshotOf([
  { siteId: '1001', cidrs: ['203.0.113.0/24'], keys: [{ key: KEY, keyId: '11' }], tokenClients: ['partner-1001', 'partner-1001-batch'] },
  { siteId: '1002', enabled: false, cidrs: ['0.0.0.0/0'], tokenClients: ['partner-1002'] },
  { siteId: '1003', cidrs: ['0.0.0.0/0'], tokenClients: ['partner-1003'], tokensNotBefore: REVOKED_AT },
  { siteId: '1004', cidrs: ['0.0.0.0/0'], tokenClients: ['partner-1004'], tokenClientsRegisteredAt: REGISTERED_AT },
  { siteId: '1005', cidrs: ['0.0.0.0/0'], tokenClients: ['partner-1005'], tokenClientsRegisteredAt: REVOKED_AT, tokensNotBefore: REGISTERED_AT },
  {
    siteId: '1007',
    cidrs: ['0.0.0.0/0'],
    keys: [{ key: TOKENS_ONLY_KEY, keyId: '71' }],
    tokenClients: ['partner-1007'],
    authMethod: 'tokens',
    graceUntil: NOW + 86_400_000,
  },
]);

const valid = (clientId: string, issuedAt = NOW - 1_000): TokenVerdict => ({ valid: true, claims: { clientId, issuedAt, expiresAt: NOW + 3_600_000 } });
const json = (value: unknown): BodyView => ({ kind: 'text', text: JSON.stringify(value) });
const EMPTY: BodyView = { kind: 'empty', lengthDeclared: false };

function bearer(verdict: TokenVerdict | undefined, overrides: Partial<CheckInput> = {}): CheckInput {
  return {
    authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln',
    ...(verdict === undefined ? {} : { bearer: verdict }),
    clientAddress: '203.0.113.7',
    body: EMPTY,
    bodyPartial: false,
    bodyCredentials: 'required',
    ...overrides,
  };
}

const decideAt = (input: CheckInput, sunset: SunsetPolicy = NO_SUNSET): Decision => decide(input, snapshot, NOW, sunset);

function denial(decision: Decision) {
  assert.equal(decision.outcome, 'deny', JSON.stringify(decision));
  if (decision.outcome !== 'deny') throw new Error('unreachable');
  return decision.denial;
}

describe('a Bearer request, in the precedence 106 → 107 → 106 (revoked) → 101 → 103 → 104', () => {
  const refused: ReadonlyArray<Exclude<TokenRule, 'revoked' | 'tokens-disabled'>> = [
    'keys-unavailable',
    'malformed',
    'algorithm',
    'type',
    'unknown-key',
    'signature',
    'issuer',
    'audience',
    'expired',
    'not-yet-valid',
    'claims',
  ];
  for (const rule of refused) {
    it(`a token the verifier refused for ${rule} → 106 with that rule, 401 and the Bearer challenge`, () => {
      const refusal = denial(decideAt(bearer({ valid: false, rule })));
      assert.deepEqual(refusal, { errorId: 106, rule });
      assert.equal(ERROR_CATALOGUE[106].httpStatus, 401);
      assert.equal(denialBody(refusal), JSON.stringify({ error: { id: 106, message: `Access token is invalid: ${tokenRuleDescription({ rule })}` } }));
      assert.equal(denialChallenge(refusal), `Bearer error="invalid_token", error_description="${tokenRuleDescription({ rule })}"`);
    });
  }

  // Each message names the fix, in words a partner's engineer can act on without asking anyone.
  const messages: ReadonlyArray<readonly [string, TokenVerdict, string]> = [
    [
      'an opaque token (the issuer was not told the resource)',
      { valid: false, rule: 'malformed', resource: 'https://partner-api.example.com' },
      'the token is not a signed JWT (JWS compact serialization); request it from the token endpoint with resource=https://partner-api.example.com to get a JWT access token for this API',
    ],
    [
      'a token for another audience',
      { valid: false, rule: 'audience', resource: 'https://partner-api.example.com' },
      'the token audience (aud) does not include this API; request the token with resource=https://partner-api.example.com',
    ],
    [
      "another issuer's token (a staff token)",
      { valid: false, rule: 'issuer' },
      'the token was issued by another issuer (iss) than the one this API trusts; request it from the token endpoint you were given for this API',
    ],
    [
      "a token while the issuer's keys cannot be fetched",
      { valid: false, rule: 'keys-unavailable' },
      "the issuer's signing keys are unavailable to this service right now, so no token can be verified; nothing is wrong with your token: retry later",
    ],
  ];
  for (const [name, verdict, description] of messages) {
    it(`${name} → 106 whose message and challenge say the fix`, () => {
      const refusal = denial(decideAt(bearer(verdict)));
      assert.equal(denialBody(refusal), JSON.stringify({ error: { id: 106, message: `Access token is invalid: ${description}` } }));
      assert.equal(denialChallenge(refusal), `Bearer error="invalid_token", error_description="${description}"`);
    });
  }

  it('every token message fits RFC 6750 error_description: printable ASCII without quote or backslash', () => {
    const errorDescription = /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/;
    for (const rule of Object.keys(TOKEN_RULE_DESCRIPTIONS) as TokenRule[]) {
      for (const resource of [undefined, 'https://partner-api.example.com']) {
        const description = tokenRuleDescription(resource === undefined ? { rule } : { rule, resource });
        assert.match(description, errorDescription, rule);
      }
    }
  });

  it('without a verifier (no TOKEN_ISSUER) → 106 saying tokens are not enabled', () => {
    const refusal = denial(decideAt(bearer(undefined)));
    assert.deepEqual(refusal, { errorId: 106, rule: 'tokens-disabled' });
    assert.match(denialBody(refusal), /token-based authentication is not enabled/);
  });

  it('the scheme in any case is the token form; anything else around it is the key form (108)', () => {
    for (const authorization of ['bearer x.y.z', 'BEARER x.y.z', 'BeArEr  x.y.z']) {
      assert.equal(denial(decideAt(bearer(undefined, { authorization }))).errorId, 106, authorization);
    }
    for (const authorization of ['Bearer', 'Bearer\tx.y.z', 'Bearerx.y.z', 'Token x.y.z', 'Basic MTAwMTprZXk=']) {
      assert.equal(denial(decideAt(bearer(undefined, { authorization }))).errorId, 108, authorization);
    }
  });

  it('a client registered to no site → 107, 403, naming the client and who registers it', () => {
    const refusal = denial(decideAt(bearer(valid('stranger'))));
    assert.deepEqual(refusal, { errorId: 107, clientId: 'stranger' });
    assert.equal(ERROR_CATALOGUE[107].httpStatus, 403);
    assert.equal(
      denialBody(refusal),
      '{"error":{"id":107,"message":"Token client stranger is not registered for any site; ask your account manager to register client stranger for your site"}}',
    );
    assert.equal(denialChallenge(refusal), undefined);
  });

  it("a token issued before the site's tokens were revoked → 106 revoked; one issued at or after the cut-off is allowed", () => {
    assert.deepEqual(denial(decideAt(bearer(valid('partner-1003', REVOKED_AT - 1)))), { errorId: 106, rule: 'revoked', siteId: '1003', clientId: 'partner-1003' });
    assert.equal(decideAt(bearer(valid('partner-1003', REVOKED_AT))).outcome, 'allow');
  });

  it('a token issued before its client was registered to the site (a client moved from another site) → 106 revoked, as the site revoking its tokens', () => {
    assert.deepEqual(denial(decideAt(bearer(valid('partner-1004', REGISTERED_AT - 1)))), { errorId: 106, rule: 'revoked', siteId: '1004', clientId: 'partner-1004' });
    assert.equal(decideAt(bearer(valid('partner-1004', REGISTERED_AT))).outcome, 'allow');
  });

  it("the later of the client's registration and the site's revocation is the cut-off", () => {
    assert.equal(denial(decideAt(bearer(valid('partner-1005', REGISTERED_AT - 1)))).errorId, 106);
    assert.equal(decideAt(bearer(valid('partner-1005', REGISTERED_AT))).outcome, 'allow');
  });

  it("a client of a disabled site → 101 with the site's id", () => {
    assert.deepEqual(denial(decideAt(bearer(valid('partner-1002')))), { errorId: 101, siteId: '1002', clientId: 'partner-1002' });
  });

  it('a client IP off the allowlist → 103: whitelisting stays mandatory with tokens', () => {
    const refusal = denial(decideAt(bearer(valid('partner-1001'), { clientAddress: '198.51.100.9' })));
    assert.deepEqual(refusal, { errorId: 103, siteId: '1001', clientIp: '198.51.100.9', clientId: 'partner-1001' });
    assert.equal(denialBody(refusal), '{"error":{"id":103,"message":"IP address 198.51.100.9 is not whitelisted for site ID 1001"}}');
    assert.equal(denial(decideAt(bearer(valid('partner-1001'), { clientAddress: undefined }))).errorId, 103);
  });

  const bodies: ReadonlyArray<readonly [string, BodyView, boolean, 'allow' | string]> = [
    ['no body', EMPTY, false, 'allow'],
    ['a body without siteid or apikey', json({ order: 7 }), false, 'allow'],
    ["the token's site as siteid", json({ siteid: 1001 }), false, 'allow'],
    ["the token's site as a string siteid, and a stale apikey", json({ siteid: '1001', apikey: KEY }), false, 'allow'],
    ['another site as siteid', json({ siteid: 1002 }), false, 'siteid-mismatch'],
    ['siteid twice', { kind: 'text', text: '{"siteid":1001,"siteid":1002}' }, false, 'siteid-duplicate'],
    ['a siteid spelled SiteID', json({ SiteID: 1002 }), false, 'siteid-missing'],
    ['a body cut by Envoy', json({ siteid: 1001 }), true, 'body-partial'],
    ['a body that is not JSON', { kind: 'text', text: 'siteid=1002' }, false, 'body-not-json'],
    ['a body declared but not forwarded', { kind: 'empty', lengthDeclared: true }, false, 'body-not-forwarded'],
  ];
  for (const [name, body, bodyPartial, expected] of bodies) {
    it(`${name} → ${expected === 'allow' ? 'allow' : `104 (${expected})`}`, () => {
      const decision = decideAt(bearer(valid('partner-1001'), { body, bodyPartial }));
      if (expected === 'allow') assert.deepEqual(decision, { outcome: 'allow', method: 'token', siteId: '1001', clientId: 'partner-1001' });
      else assert.equal((denial(decision) as { rule?: string }).rule, expected);
    });
  }

  it('says which site in a mismatch message without naming a header the token request has not', () => {
    const refusal = denial(decideAt(bearer(valid('partner-1001'), { body: json({ siteid: 1002 }) })));
    assert.equal(denialBody(refusal), '{"error":{"id":104,"message":"Request body siteid does not match the site that the access token was issued for"}}');
  });

  it('brownouts and the sunset do not touch tokens', () => {
    const retired: SunsetPolicy = { sunsetAt: NOW - 1, enforce: true, guideUrl: undefined };
    const brownout = { id: '9', from: NOW - 1, until: NOW + 1, siteIds: null, dryRun: false };
    assert.equal(decideAt(bearer(valid('partner-1001')), retired).outcome, 'allow');
    assert.equal(decide(bearer(valid('partner-1001')), snapshotOf([{ siteId: '1001', cidrs: ['0.0.0.0/0'], tokenClients: ['partner-1001'] }], [brownout]), NOW, NO_SUNSET).outcome, 'allow');
  });
});

describe('a site switched to tokens only', () => {
  const keyRequest: CheckInput = {
    authorization: `1007:${TOKENS_ONLY_KEY}`,
    clientAddress: '203.0.113.7',
    body: json({ siteid: 1007, apikey: TOKENS_ONLY_KEY }),
    bodyPartial: false,
    bodyCredentials: 'required',
  };

  it('refuses a valid API key with 105, saying to use tokens and where the guide is, whatever its grace', () => {
    const refusal = denial(decideAt(keyRequest, { ...NO_SUNSET, guideUrl: 'https://developers.example.com/tokens' }));
    assert.equal(refusal.errorId, 105);
    assert.equal(
      denialBody(refusal),
      '{"error":{"id":105,"message":"API key authentication is switched off for site 1007; use token-based authentication; migration guide: https://developers.example.com/tokens"}}',
    );
    assert.equal(denialBody(denial(decideAt(keyRequest))), '{"error":{"id":105,"message":"API key authentication is switched off for site 1007; use token-based authentication"}}');
  });

  it('tells nobody without valid credentials: a wrong key is still 102, a wrong body 104', () => {
    assert.equal(denial(decideAt({ ...keyRequest, authorization: `1007:${KEY}` })).errorId, 102);
    assert.equal(denial(decideAt({ ...keyRequest, body: json({ siteid: 1007 }) })).errorId, 104);
  });

  it("accepts the site's tokens", () => {
    assert.deepEqual(decideAt(bearer(valid('partner-1007'))), { outcome: 'allow', method: 'token', siteId: '1007', clientId: 'partner-1007' });
  });

  it('a site on both methods still accepts its key', () => {
    const allowed = decideAt({ ...keyRequest, authorization: `1001:${KEY}`, body: json({ siteid: 1001, apikey: KEY }) });
    assert.deepEqual(allowed, { outcome: 'allow', method: 'api_key', siteId: '1001', keyId: '11' });
  });
});
