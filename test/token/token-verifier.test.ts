import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CompactSign, exportSPKI, importJWK, SignJWT, type JWTPayload } from 'jose';
import { loadConfig, type TokenSettings } from '../../src/config.js';
import type { TokenVerdict } from '../../src/decision/types.js';
import { createLogger } from '../../src/observe/logger.js';
import { IssuerKeys } from '../../src/token/issuer-keys.js';
import { TOKEN_MAX_CHARS, TokenVerifier } from '../../src/token/token-verifier.js';
import { eventually } from '../support/eventually.js';
import { JwksServer, signedToken, signingKey, type SigningKey } from '../support/jwks-server.js';

const ISSUER = 'https://login.example.com/realms/partners';
const AUDIENCE = 'https://partner-api.example.com';
const NOW = Date.parse('2026-11-22T12:00:00Z');
const NOW_S = NOW / 1000;
const logger = createLogger('silent');

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

function settings(jwksUrl: string, overrides: Record<string, string> = {}): TokenSettings {
  const tokens = loadConfig({ TOKEN_ISSUER: ISSUER, TOKEN_AUDIENCE: AUDIENCE, TOKEN_JWKS_URL: jwksUrl, ...overrides }).tokens;
  assert.ok(tokens);
  return tokens;
}

const claims = (overrides: JWTPayload = {}): JWTPayload => ({
  iss: ISSUER,
  aud: AUDIENCE,
  sub: 'partner-1001',
  client_id: 'partner-1001',
  iat: NOW_S - 60,
  exp: NOW_S + 300,
  jti: 'token-1',
  ...overrides,
});

describe('TokenVerifier: each RFC 9068 rule, and the attacks on it', () => {
  let jwks: JwksServer;
  let keys: IssuerKeys;
  let verifier: TokenVerifier;
  let rsa: SigningKey;
  let ec: SigningKey;
  let ed: SigningKey;
  let unpublished: SigningKey;

  before(async () => {
    [rsa, ec, ed, unpublished] = await Promise.all([signingKey('rsa-1'), signingKey('ec-1', 'ES256'), signingKey('ed-1', 'EdDSA'), signingKey('rsa-1')]);
    jwks = await JwksServer.start();
    jwks.publish([rsa, ec, ed]);
    keys = new IssuerKeys({ jwksUrl: jwks.url, logger, unknownKeyCooldownMs: 60_000 });
    await keys.start();
    verifier = new TokenVerifier(settings(jwks.url), keys);
  });
  after(async () => {
    await keys.stop();
    await jwks.close();
  });

  const verdict = async (token: string, at = NOW): Promise<TokenVerdict | undefined> => verifier.verify(token, at);
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
    const widened = new TokenVerifier(settings(jwks.url, { TOKEN_TYPES: 'at+jwt,JWT' }), keys);
    assert.equal(((await widened.verify(await signedToken(rsa, claims(), { typ: 'JWT' }), NOW)) as TokenVerdict).valid, true);
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
    assert.equal(again.valid, true);
    assert.deepEqual(verifier.verify(token, (NOW_S + 300 + 31) * 1000), { valid: false, rule: 'expired' });
  });

  it('keeps refused tokens nowhere, and verified ones only up to its bound', async () => {
    const bounded = new TokenVerifier(settings(jwks.url), keys, 2);
    for (let i = 0; i < 5; i++) await bounded.verify(await signedToken(rsa, claims({ jti: `bound-${i}` })), NOW);
    await bounded.verify(await signedToken(rsa, claims({ iss: 'https://evil.example.com' })), NOW);
    assert.equal(bounded.size, 2);
  });
});

describe("IssuerKeys: the issuer's JWKS fetched, refreshed and bounded", () => {
  it('picks up a key the issuer publishes later when the first token names it, and keeps the old one', async () => {
    const [first, second] = await Promise.all([signingKey('k1'), signingKey('k2')]);
    const jwks = await JwksServer.start();
    jwks.publish([first]);
    const keys = new IssuerKeys({ jwksUrl: jwks.url, logger, unknownKeyCooldownMs: 0 });
    try {
      await keys.start();
      const verifier = new TokenVerifier(settings(jwks.url), keys);
      jwks.publish([second, first]);
      assert.equal(((await verifier.verify(await signedToken(second, claims({ jti: 'rotated' })), NOW)) as TokenVerdict).valid, true);
      assert.equal(((await verifier.verify(await signedToken(first, claims({ jti: 'old' })), NOW)) as TokenVerdict).valid, true);
    } finally {
      await keys.stop();
      await jwks.close();
    }
  });

  it('asks the issuer at most once per cool-down however many made-up kids arrive, and fetches once it ends', async () => {
    const [known, later] = await Promise.all([signingKey('known'), signingKey('later')]);
    const jwks = await JwksServer.start();
    jwks.publish([known]);
    const keys = new IssuerKeys({ jwksUrl: jwks.url, logger, unknownKeyCooldownMs: 1_000 });
    try {
      await keys.start();
      const verifier = new TokenVerifier(settings(jwks.url), keys);
      const fetchesBefore = jwks.fetches;
      const flood = await Promise.all(Array.from({ length: 50 }, (_, i) => signedToken(known, claims({ jti: `flood-${i}` }), { kid: `made-up-${i}` })));
      const verdicts = await Promise.all(flood.map((token) => verifier.verify(token, NOW)));
      assert.ok(verdicts.every((result) => result !== undefined && !result.valid && result.rule === 'unknown-key'));
      assert.ok(jwks.fetches - fetchesBefore <= 1, `${jwks.fetches - fetchesBefore} fetches for 50 made-up kids`);
      // The issuer publishes a key during the cool-down: it is fetched when the cool-down ends, without another token.
      jwks.publish([known, later]);
      await verifier.verify(await signedToken(later, claims({ jti: 'during-cooldown' })), NOW);
      let attempt = 0;
      await eventually(
        'the key published during the cool-down verifies',
        async () => verifier.verify(await signedToken(later, claims({ jti: `after-cooldown-${attempt++}` })), NOW),
        (result) => result !== undefined && result.valid,
        10_000,
      );
    } finally {
      await keys.stop();
      await jwks.close();
    }
  });

  it('keeps the last good key set when a fetch fails, and has none before the first success', async () => {
    const key = await signingKey('steady');
    const jwks = await JwksServer.start();
    jwks.serve(503, 'unavailable');
    const keys = new IssuerKeys({ jwksUrl: jwks.url, logger, unknownKeyCooldownMs: 0, retryMs: 20 });
    try {
      const started = keys.start();
      await eventually('two failed fetches', async () => jwks.fetches, (fetches) => fetches >= 2, 10_000);
      assert.equal(keys.loaded, false);
      const verifier = new TokenVerifier(settings(jwks.url), keys);
      assert.equal(verifier.verify(await signedToken(key, claims()), NOW), undefined, 'no verdict without keys: the check is not decided');
      jwks.publish([key]);
      await started;
      jwks.serve(500, 'broken');
      // A made-up kid makes it fetch again, which fails: the set it had still verifies.
      await verifier.verify(await signedToken(key, claims({ jti: 'x' }), { kid: 'made-up' }), NOW);
      assert.equal(((await verifier.verify(await signedToken(key, claims({ jti: 'still' })), NOW)) as TokenVerdict).valid, true);
    } finally {
      await keys.stop();
      await jwks.close();
    }
  });

  it('refuses an oversized or malformed JWKS', async () => {
    const jwks = await JwksServer.start();
    for (const body of [JSON.stringify({ keys: [], padding: 'x'.repeat(300 * 1024) }), 'not json', '{"nokeys":[]}']) {
      jwks.serve(200, body);
      const keys = new IssuerKeys({ jwksUrl: jwks.url, logger, retryMs: 60_000 });
      const fetchesBefore = jwks.fetches;
      void keys.start();
      await eventually('a fetch', async () => jwks.fetches, (fetches) => fetches > fetchesBefore, 10_000);
      await keys.stop();
      assert.equal(keys.loaded, false, body.slice(0, 20));
    }
    await jwks.close();
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
    });
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
    refused({ TOKEN_ISSUER: ISSUER, TOKEN_AUDIENCE: AUDIENCE }, 'TOKEN_JWKS_URL', /required with TOKEN_ISSUER/);
    refused({ TOKEN_AUDIENCE: AUDIENCE }, 'TOKEN_AUDIENCE', /only read with TOKEN_ISSUER/);
    refused({ ...base, TOKEN_CLOCK_SKEW_SECONDS: '301' }, 'TOKEN_CLOCK_SKEW_SECONDS', /0 to 300/);
  });
});
