import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { CompactSign, createLocalJWKSet, exportSPKI, importJWK, SignJWT, type JWTPayload } from 'jose';
import { loadConfig } from '../../src/config.js';
import type { TokenVerdict } from '../../src/decision/types.js';
import type { KeySource } from '../../src/token/issuer-keys.js';
import { TOKEN_MAX_CHARS } from '../../src/token/access-token.js';
import { TokenVerifier, VERIFIED_TOKENS_MAX } from '../../src/token/token-verifier.js';
import { VerificationBudget } from '../../src/token/verification-budget.js';
import { signedToken, signingKey, tokenClaims, tokenSettings, type SigningKey } from '../support/jwks-server.js';

const ISSUER = 'https://login.example.com/realms/partners';
const AUDIENCE = 'https://partner-api.example.com';
const NOW = Date.parse('2026-11-22T12:00:00Z');
const NOW_S = NOW / 1000;

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

const JWKS_URL = 'https://login.example.com/realms/partners/certs';
const settings = (jwksUrl: string, overrides: Record<string, string> = {}) => tokenSettings(ISSUER, AUDIENCE, jwksUrl, overrides);
const claims = (overrides: JWTPayload = {}) => tokenClaims(ISSUER, AUDIENCE, NOW_S, overrides);

describe('TokenVerifier: each RFC 9068 rule, and the attacks on it', () => {
  let keys: KeySource;
  let verifier: TokenVerifier;
  let rsa: SigningKey;
  let ec: SigningKey;
  let ed: SigningKey;
  let unpublished: SigningKey;

  before(async () => {
    [rsa, ec, ed, unpublished] = await Promise.all([signingKey('rsa-1'), signingKey('ec-1', 'ES256'), signingKey('ed-1', 'EdDSA'), signingKey('rsa-1')]);
    // The issuer's key set as IssuerKeys holds it once fetched (its fetching is tested in test/integration/token/).
    keys = { loaded: true, getKey: createLocalJWKSet({ keys: [rsa.publicJwk, ec.publicJwk, ed.publicJwk] }) };
    verifier = new TokenVerifier(settings(JWKS_URL), keys);
  });

  // A key set that never fetches again: a missing kid is unknown at once, never undecided.
  const verdict = async (token: string, at = NOW): Promise<TokenVerdict | undefined> => (await verifier.verify(token, at)) as TokenVerdict;
  const rule = async (token: string, at = NOW): Promise<string> => {
    const result = await verdict(token, at);
    assert.ok(result);
    return result.valid ? 'valid' : result.rule;
  };

  it('accepts what the issuer signed for this API, with RS256, ES256 and EdDSA, and reads client_id, iat and exp', async () => {
    for (const key of [rsa, ec, ed]) {
      assert.deepEqual(await verdict(await signedToken(key, claims({ jti: key.kid }))), {
        valid: true,
        claims: { clientId: 'partner-1001', issuedAt: (NOW_S - 60) * 1000, expiresAt: (NOW_S + 300) * 1000 },
      });
    }
  });

  it('refuses alg none', async () => {
    const unsigned = `${b64url({ alg: 'none', typ: 'at+jwt', kid: 'rsa-1' })}.${b64url(claims())}.`;
    assert.equal(await rule(unsigned), 'algorithm');
  });

  it("refuses HS256 keyed with the issuer's RSA public key, as PEM and as the JWK's bytes", async () => {
    const pem = await exportSPKI((await importJWK(rsa.publicJwk, 'RS256')) as Parameters<typeof exportSPKI>[0]);
    for (const secret of [pem, JSON.stringify(rsa.publicJwk)]) {
      const forged = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: 'rsa-1' }).sign(new TextEncoder().encode(secret));
      assert.equal(await rule(forged), 'algorithm');
    }
  });

  it('refuses a payload changed after signing', async () => {
    const [header, , signature] = (await signedToken(rsa, claims())).split('.');
    assert.equal(await rule(`${header}.${b64url(claims({ client_id: 'partner-9999' }))}.${signature}`), 'signature');
  });

  it('refuses a key the issuer never published, even under a published kid', async () => {
    assert.equal(await rule(await signedToken(unpublished, claims())), 'signature');
  });

  it('refuses a made-up kid, and a token with no kid', async () => {
    assert.equal(await rule(await signedToken(rsa, claims(), { kid: 'made-up' })), 'unknown-key');
    const noKid = await new SignJWT(claims()).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt' }).sign(rsa.privateKey);
    assert.equal(await rule(noKid), 'unknown-key');
  });

  it("says another issuer's token is another issuer's before looking at its kid, and only that: the claim is never trusted", async () => {
    const staff = await signingKey('staff-1');
    assert.equal(await rule(await signedToken(staff, claims({ iss: 'https://login.example.com/realms/staff' }))), 'issuer');
    assert.equal(await rule(await signedToken(rsa, claims({ iss: 'https://login.example.com/realms/staff' }), { kid: undefined })), 'issuer');
    // A token that claims our issuer but is signed by another key is refused on its signature or kid, as before.
    assert.equal(await rule(await signedToken(staff, claims())), 'unknown-key');
    assert.equal(await rule(await signedToken(staff, claims({ iss: 'https://login.example.com/realms/staff' }), { typ: 'JWT' })), 'type', 'header rules first');
  });

  it('names the resource to request when the token is no JWT at all or for another audience', async () => {
    assert.deepEqual(await verdict('2YotnFZFEjr1zCsicMWpAA'), { valid: false, rule: 'malformed', resource: AUDIENCE });
    assert.deepEqual(await verdict(await signedToken(rsa, claims({ aud: 'https://billing-api.example.com' }))), {
      valid: false,
      rule: 'audience',
      resource: AUDIENCE,
      claimant: { clientId: 'partner-1001', signed: true },
    });
    assert.deepEqual(await verdict(await signedToken(rsa, claims({ exp: NOW_S - 60 }))), { valid: false, rule: 'expired', claimant: { clientId: 'partner-1001', signed: true } });
  });

  it('refuses a client_id that is not printable ASCII (RFC 6749 VSCHAR), since a 107 quotes it back', async () => {
    for (const clientId of ['partner\n1001', 'partner\u202e1001', 'pärtner', 'x'.repeat(256)]) {
      assert.equal(await rule(await signedToken(rsa, claims({ client_id: clientId, jti: clientId }))), 'claims', JSON.stringify(clientId));
    }
    assert.equal(await rule(await signedToken(rsa, claims({ client_id: 'partner 1001 "batch"', jti: 'spaces' }))), 'valid');
  });

  it('refuses a token without exp, iat or client_id', async () => {
    for (const missing of ['exp', 'iat', 'client_id']) {
      const partial = claims();
      delete partial[missing];
      assert.equal(await rule(await signedToken(rsa, partial)), 'claims', missing);
    }
    assert.equal(await rule(await signedToken(rsa, claims({ client_id: 42 as unknown as string }))), 'claims');
  });

  it('refuses typ JWT and a missing typ; accepts application/at+jwt in any case', async () => {
    assert.equal(await rule(await signedToken(rsa, claims(), { typ: 'JWT' })), 'type');
    const noTyp = await new SignJWT(claims()).setProtectedHeader({ alg: 'RS256', kid: 'rsa-1' }).sign(rsa.privateKey);
    assert.equal(await rule(noTyp), 'type');
    assert.equal(await rule(await signedToken(rsa, claims({ jti: 'media-type' }), { typ: 'Application/AT+JWT' })), 'valid');
  });

  it('TOKEN_TYPES widens typ for issuers that write JWT', async () => {
    const widened = new TokenVerifier(settings(JWKS_URL, { TOKEN_TYPES: 'at+jwt,JWT' }), keys);
    assert.equal(((await widened.verify(await signedToken(rsa, claims(), { typ: 'JWT' }), NOW)) as TokenVerdict).valid, true);
  });

  it('TOKEN_TYPES none admits a token without typ, and never one whose typ says "none"', async () => {
    const typeless = new TokenVerifier(settings(JWKS_URL, { TOKEN_TYPES: 'at+jwt,none' }), keys);
    const rule = async (token: string) => {
      const result = (await typeless.verify(token, NOW)) as TokenVerdict;
      return result.valid ? 'valid' : result.rule;
    };
    assert.equal(await rule(await signedToken(rsa, claims({ jti: 'no-typ' }), { typ: undefined })), 'valid');
    assert.equal(await rule(await signedToken(rsa, claims({ jti: 'typ-none' }), { typ: 'none' })), 'type');
    assert.equal(await rule(await signedToken(rsa, claims({ jti: 'typ-jwt' }), { typ: 'JWT' })), 'type');
  });

  it('refuses another issuer and another audience; accepts an aud list that contains ours', async () => {
    assert.equal(await rule(await signedToken(rsa, claims({ iss: 'https://evil.example.com' }))), 'issuer');
    assert.equal(await rule(await signedToken(rsa, claims({ aud: 'https://other-api.example.com' }))), 'audience');
    assert.equal(await rule(await signedToken(rsa, claims({ aud: ['https://other-api.example.com', AUDIENCE], jti: 'aud-list' }))), 'valid');
  });

  it('refuses an expired token and one not valid yet, each beyond TOKEN_CLOCK_SKEW_SECONDS (30) only', async () => {
    assert.equal(await rule(await signedToken(rsa, claims({ exp: NOW_S - 31, jti: 'late' }))), 'expired');
    assert.equal(await rule(await signedToken(rsa, claims({ exp: NOW_S - 29, jti: 'skewed' }))), 'valid');
    assert.equal(await rule(await signedToken(rsa, claims({ nbf: NOW_S + 31, jti: 'early' }))), 'not-yet-valid');
    assert.equal(await rule(await signedToken(rsa, claims({ nbf: NOW_S + 29, jti: 'early-skewed' }))), 'valid');
    assert.equal(await rule(await signedToken(rsa, claims({ iat: NOW_S + 31, jti: 'future' }))), 'not-yet-valid');
  });

  it('refuses a token issued longer ago than TOKEN_MAX_AGE_SECONDS (86400), or valid for longer, and keeps neither', async () => {
    const DAY = 86_400;
    assert.equal(await rule(await signedToken(rsa, claims({ iat: NOW_S - 3 * 365 * DAY, exp: NOW_S + 300, jti: 'years-old' }))), 'too-old');
    assert.equal(await rule(await signedToken(rsa, claims({ iat: NOW_S - 60, exp: NOW_S + 2 * DAY, jti: 'two-days' }))), 'too-old');
    assert.equal(await rule(await signedToken(rsa, claims({ iat: NOW_S - 60, exp: NOW_S - 60 + DAY, jti: 'a-day' }))), 'valid');
    // JSON has no bound on a number: 1e400 reads as Infinity, which jose takes for a time.
    const payload = JSON.stringify(claims({ jti: 'never-expiring' })).replace(/"exp":\d+/, '"exp":1e400');
    const neverExpiring = await new CompactSign(new TextEncoder().encode(payload)).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: 'rsa-1' }).sign(rsa.privateKey);
    assert.equal(await rule(neverExpiring), 'too-old');
    assert.equal(await rule(neverExpiring, NOW + 1_000), 'too-old', 'not kept as verified');
    const shortBound = new TokenVerifier(settings(JWKS_URL, { TOKEN_MAX_AGE_SECONDS: '600' }), keys);
    const fresh = await signedToken(rsa, claims({ iat: NOW_S - 60, exp: NOW_S + 500, jti: 'within-a-short-bound' }));
    assert.deepEqual(await shortBound.verify(fresh, NOW), { valid: true, claims: { clientId: 'partner-1001', issuedAt: (NOW_S - 60) * 1000, expiresAt: (NOW_S + 500) * 1000 } });
    const beyond = await signedToken(rsa, claims({ iat: NOW_S - 60, exp: NOW_S + 600, jti: 'beyond-a-short-bound' }));
    assert.equal(await rule(beyond), 'valid', 'the default bound admits it');
    assert.deepEqual(await shortBound.verify(beyond, NOW), { valid: false, rule: 'too-old', claimant: { clientId: 'partner-1001', signed: true } });
    assert.deepEqual(await shortBound.verify(await signedToken(rsa, claims({ iat: NOW_S - 700, exp: NOW_S + 200, jti: 'issued-too-long-ago' })), NOW), { valid: false, rule: 'too-old', claimant: { clientId: 'partner-1001', signed: true } });
  });

  it('bounds the signature checks of new tokens per source address (IPv6 by /64): a forged flood from one address is undecided, never another address\'s new token or a kept one', async () => {
    const budget = new VerificationBudget({ perAddress: { burst: 5, perSecond: 1 }, overall: { burst: 100, perSecond: 100 } });
    const bounded = new TokenVerifier(settings(JWKS_URL), keys, VERIFIED_TOKENS_MAX, budget);
    const kept = await signedToken(rsa, claims({ jti: 'kept-before-the-flood' }));
    assert.equal(((await bounded.verify(kept, NOW, '198.51.100.7')) as TokenVerdict).valid, true);
    // Signed with a key the issuer never published, under its published kid: each costs a signature check.
    const forged = await Promise.all(Array.from({ length: 20 }, (_, i) => signedToken(unpublished, claims({ jti: `forged-${i}` }))));
    const answers = await Promise.all(forged.map(async (token) => bounded.verify(token, NOW, '198.51.100.7')));
    const outcomes = answers.map((answer) => ('undecided' in answer ? answer.undecided : answer.valid ? 'valid' : answer.rule));
    assert.deepEqual(outcomes, [...Array<string>(4).fill('signature'), ...Array<string>(16).fill('verification-budget')]);
    assert.deepEqual(bounded.verify(kept, NOW, '198.51.100.7'), { valid: true, claims: { clientId: 'partner-1001', issuedAt: (NOW_S - 60) * 1000, expiresAt: (NOW_S + 300) * 1000 } }, 'a kept token is answered at once');
    assert.equal(((await bounded.verify(await signedToken(rsa, claims({ jti: 'another-address' })), NOW, '203.0.113.9')) as TokenVerdict).valid, true);
    for (let i = 0; i < 5; i++) await bounded.verify(await signedToken(unpublished, claims({ jti: `v6-${i}` })), NOW, `2001:db8:1:2::${i + 1}`);
    assert.deepEqual(await bounded.verify(await signedToken(rsa, claims({ jti: 'same-64' })), NOW, '2001:db8:1:2:ffff::1'), { undecided: 'verification-budget' });
    assert.equal(((await bounded.verify(await signedToken(rsa, claims({ jti: 'other-64' })), NOW, '2001:db8:1:3::1')) as TokenVerdict).valid, true);
    assert.equal(((await bounded.verify(await signedToken(rsa, claims({ jti: 'a-second-later' })), NOW + 1_000, '198.51.100.7')) as TokenVerdict).valid, true, 'the budget refills');
  });

  it('refuses what is not a compact JWS, and oversized tokens unread', async () => {
    const signedNonsense = await new CompactSign(new TextEncoder().encode('not json'))
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: 'rsa-1' })
      .sign(rsa.privateKey);
    for (const token of ['', 'abc', 'a.b', 'a.b.c', signedNonsense, 'x'.repeat(TOKEN_MAX_CHARS + 1)]) {
      assert.equal(await rule(token), 'malformed', token.slice(0, 20));
    }
  });

  it('answers a token it verified before at once, and as expired once past its exp', async () => {
    const token = await signedToken(rsa, claims({ jti: 'repeat' }));
    assert.equal(((await verdict(token)) as TokenVerdict).valid, true);
    const again = verifier.verify(token, NOW + 1_000);
    assert.ok(again !== undefined && !(again instanceof Promise), 'a kept token needs no signature check');
    assert.deepEqual(again, { valid: true, claims: { clientId: 'partner-1001', issuedAt: (NOW_S - 60) * 1000, expiresAt: (NOW_S + 300) * 1000 } });
    assert.deepEqual(verifier.verify(token, (NOW_S + 300 + 31) * 1000), { valid: false, rule: 'expired', claimant: { clientId: 'partner-1001', signed: true } });
  });

  it("names a refused token's client for the refusal counts, signed only when our issuer's signature verified", async () => {
    const claimant = async (token: string) => {
      const result = await verdict(token);
      assert.ok(result !== undefined && !result.valid);
      return result.claimant;
    };
    assert.deepEqual(await claimant(await signedToken(rsa, claims({ exp: NOW_S - 60 }))), { clientId: 'partner-1001', signed: true });
    // Anyone can write a client id into a token; signed by a key the issuer never published, it is only a claim.
    assert.deepEqual(await claimant(await signedToken(unpublished, claims({ client_id: 'partner-2002' }))), { clientId: 'partner-2002', signed: false });
    const [header, , signature] = (await signedToken(rsa, claims())).split('.');
    assert.deepEqual(await claimant(`${header}.${b64url(claims({ client_id: 'partner-9999' }))}.${signature}`), { clientId: 'partner-9999', signed: false });
    assert.equal(await claimant(await signedToken(rsa, claims({ client_id: 'with\nnewline', exp: NOW_S - 60 }))), undefined, 'no client id that is not one');
    assert.equal(await claimant('2YotnFZFEjr1zCsicMWpAA'), undefined);
  });

  it('keeps refused tokens nowhere, and verified ones only up to its bound', async () => {
    const bounded = new TokenVerifier(settings(JWKS_URL), keys, 2);
    for (let i = 0; i < 5; i++) await bounded.verify(await signedToken(rsa, claims({ jti: `bound-${i}` })), NOW);
    await bounded.verify(await signedToken(rsa, claims({ iss: 'https://evil.example.com' })), NOW);
    assert.equal(bounded.size, 2);
  });
});

describe('token settings', () => {
  const base = { TOKEN_ISSUER: ISSUER, TOKEN_AUDIENCE: AUDIENCE, TOKEN_JWKS_URL: 'https://login.example.com/jwks' };
  const refused = (env: Record<string, string>, variable: string, reason: RegExp) =>
    assert.throws(() => loadConfig(env), (error: Error & { variable?: string }) => error.variable === variable && reason.test(error.message));

  it('are off without TOKEN_ISSUER, with the defaults otherwise', () => {
    assert.equal(loadConfig({}).tokens, undefined);
    assert.deepEqual(loadConfig(base).tokens, {
      issuer: ISSUER,
      audience: AUDIENCE,
      jwksUrl: 'https://login.example.com/jwks',
      algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA'],
      types: ['at+jwt'],
      clockSkewSeconds: 30,
      maxAgeSeconds: 86_400,
    });
  });

  it("bound a token's age by TOKEN_MAX_AGE_SECONDS, and refuse a bound that is not one, naming the variable", () => {
    assert.equal(loadConfig({ ...base, TOKEN_MAX_AGE_SECONDS: '3600' }).tokens?.maxAgeSeconds, 3_600);
    for (const value of ['abc', '-1', '0', '1e9', '2592001', '86400s']) refused({ ...base, TOKEN_MAX_AGE_SECONDS: value }, 'TOKEN_MAX_AGE_SECONDS', /whole number from 60 to 2592000/);
  });

  it('never accept none or an HMAC algorithm', () => {
    refused({ ...base, TOKEN_ALGORITHMS: 'RS256,HS256' }, 'TOKEN_ALGORITHMS', /HS256 is never accepted/);
    refused({ ...base, TOKEN_ALGORITHMS: 'none' }, 'TOKEN_ALGORITHMS', /none is never accepted/);
    refused({ ...base, TOKEN_ALGORITHMS: 'RS257' }, 'TOKEN_ALGORITHMS', /not one of/);
  });

  it('take the JWKS over https, or http on loopback only', () => {
    refused({ ...base, TOKEN_JWKS_URL: 'http://login.example.com/jwks' }, 'TOKEN_JWKS_URL', /https/);
    assert.equal(loadConfig({ ...base, TOKEN_JWKS_URL: 'http://127.0.0.1:9470/jwks' }).tokens?.jwksUrl, 'http://127.0.0.1:9470/jwks');
    assert.equal(loadConfig({ ...base, TOKEN_JWKS_URL: 'http://[::1]:9470/jwks' }).tokens?.jwksUrl, 'http://[::1]:9470/jwks');
  });

  it('name what is missing or set without TOKEN_ISSUER', () => {
    refused({ TOKEN_ISSUER: ISSUER, TOKEN_JWKS_URL: base.TOKEN_JWKS_URL }, 'TOKEN_AUDIENCE', /required with TOKEN_ISSUER/);
    refused({ TOKEN_AUDIENCE: AUDIENCE }, 'TOKEN_AUDIENCE', /only read with TOKEN_ISSUER/);
    refused({ ...base, TOKEN_CLOCK_SKEW_SECONDS: '301' }, 'TOKEN_CLOCK_SKEW_SECONDS', /0 to 300/);
  });

  it("find the JWKS through TOKEN_ISSUER's discovery document without TOKEN_JWKS_URL, which needs an https issuer", () => {
    assert.equal(loadConfig({ TOKEN_ISSUER: ISSUER, TOKEN_AUDIENCE: AUDIENCE }).tokens?.jwksUrl, undefined);
    assert.equal(loadConfig({ TOKEN_ISSUER: 'http://127.0.0.1:9470', TOKEN_AUDIENCE: AUDIENCE }).tokens?.issuer, 'http://127.0.0.1:9470');
    refused({ TOKEN_ISSUER: 'http://login.example.com', TOKEN_AUDIENCE: AUDIENCE }, 'TOKEN_ISSUER', /discovery document .* set TOKEN_JWKS_URL/);
    refused({ TOKEN_ISSUER: 'partners', TOKEN_AUDIENCE: AUDIENCE }, 'TOKEN_ISSUER', /set TOKEN_JWKS_URL/);
    assert.equal(loadConfig({ ...base, TOKEN_ISSUER: 'partners' }).tokens?.issuer, 'partners', 'any iss is accepted with TOKEN_JWKS_URL set');
  });

  it('take a TOKEN_AUDIENCE that partners can be told to request, in JSON and in WWW-Authenticate', () => {
    for (const audience of ['https://partner-api.example.com', 'urn:example:partner-api', 'api://1234-abcd']) {
      assert.equal(loadConfig({ ...base, TOKEN_AUDIENCE: audience }).tokens?.audience, audience);
    }
    for (const audience of ['https://api.example.com/"x', 'https://api.example.com/\\x', 'partner api', 'https://api.example.com/é', 'x'.repeat(513)]) {
      refused({ ...base, TOKEN_AUDIENCE: audience }, 'TOKEN_AUDIENCE', /printable ASCII without spaces, quotes or backslashes/);
    }
  });
});
