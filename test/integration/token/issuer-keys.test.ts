import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JWTPayload } from 'jose';
import type { TokenVerdict } from '../../../src/decision/types.js';
import { createLogger } from '../../../src/observe/logger.js';
import { IssuerKeys } from '../../../src/token/issuer-keys.js';
import { TokenVerifier } from '../../../src/token/token-verifier.js';
import { eventually } from '../../support/eventually.js';
import { JwksServer, signedToken, signingKey, tokenClaims, tokenSettings } from '../../support/jwks-server.js';

const ISSUER = 'https://login.example.com/realms/partners';
const AUDIENCE = 'https://partner-api.example.com';
const NOW = Date.parse('2026-11-22T12:00:00Z');
const logger = createLogger('silent');
const settings = (jwksUrl: string) => tokenSettings(ISSUER, AUDIENCE, jwksUrl);
const claims = (overrides: JWTPayload = {}) => tokenClaims(ISSUER, AUDIENCE, NOW / 1000, overrides);

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

