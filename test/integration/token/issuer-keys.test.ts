import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { exportJWK, type JSONWebKeySet, type JWTPayload } from 'jose';
import type { TokenVerdict } from '../../../src/decision/types.js';
import { createLogger } from '../../../src/observe/logger.js';
import { IssuerKeys, type KeySetStore, type StoredKeySet } from '../../../src/token/issuer-keys.js';
import { TokenVerifier, VERIFIED_TOKENS_MAX } from '../../../src/token/token-verifier.js';
import { VerificationBudget } from '../../../src/token/verification-budget.js';
import { eventually } from '../../support/eventually.js';
import { JwksServer, signedToken, signingKey, tokenClaims, tokenSettings } from '../../support/jwks-server.js';

const ISSUER = 'https://login.example.com/realms/partners';
const AUDIENCE = 'https://partner-api.example.com';
const NOW = Date.parse('2026-11-22T12:00:00Z');
const logger = createLogger('silent');
const settings = (jwksUrl: string) => tokenSettings(ISSUER, AUDIENCE, jwksUrl);
const claims = (overrides: JWTPayload = {}) => tokenClaims(ISSUER, AUDIENCE, NOW / 1000, overrides);
const PENDING = { undecided: 'unknown-kid-pending' };
const COOL_DOWN_MS = 3_000;
/** The tests below run at one fixed instant, where no budget refills: these verify as often as they like. */
const UNBOUNDED = new VerificationBudget({ perAddress: { burst: 1e9, perSecond: 1e9 }, overall: { burst: 1e9, perSecond: 1e9 } });

describe("IssuerKeys: the issuer's JWKS fetched, refreshed and bounded", () => {
  it('picks up a key the issuer publishes later when the first token names it, and keeps the old one', async () => {
    const [first, second] = await Promise.all([signingKey('k1'), signingKey('k2')]);
    const jwks = await JwksServer.start();
    jwks.publish([first]);
    const keys = new IssuerKeys({ jwksUrl: jwks.url, logger, unknownKeyCooldownMs: 0 });
    try {
      await keys.start();
      const verifier = new TokenVerifier(settings(jwks.url), keys, VERIFIED_TOKENS_MAX, UNBOUNDED);
      jwks.publish([second, first]);
      assert.deepEqual(await verifier.verify(await signedToken(second, claims({ jti: 'rotated' })), NOW), { valid: true, claims: { clientId: 'partner-1001', issuedAt: NOW - 60_000, expiresAt: NOW + 300_000 } });
      assert.equal(((await verifier.verify(await signedToken(first, claims({ jti: 'old' })), NOW)) as TokenVerdict).valid, true);
    } finally {
      await keys.stop();
      await jwks.close();
    }
  });

  it('asks the issuer at most once per cool-down however many made-up kids arrive; each is undecided until a fetch made after it, then refused', async () => {
    const known = await signingKey('known');
    const jwks = await JwksServer.start();
    jwks.publish([known]);
    // Signed before the first fetch, so that the cool-down it starts is not over before they arrive on a busy machine.
    const flood = await Promise.all(Array.from({ length: 50 }, (_, i) => signedToken(known, claims({ jti: `flood-${i}` }), { kid: `made-up-${i}` })));
    const keys = new IssuerKeys({ jwksUrl: jwks.url, logger, unknownKeyCooldownMs: COOL_DOWN_MS });
    try {
      await keys.start();
      const verifier = new TokenVerifier(settings(jwks.url), keys, VERIFIED_TOKENS_MAX, UNBOUNDED);
      const fetchesBefore = jwks.fetches;
      const verdicts = await Promise.all(flood.map((token) => verifier.verify(token, NOW)));
      assert.deepEqual(new Set(verdicts.map((result) => JSON.stringify(result))), new Set([JSON.stringify(PENDING)]));
      assert.ok(jwks.fetches - fetchesBefore <= 1, `${jwks.fetches - fetchesBefore} fetches for 50 made-up kids`);
      const started = performance.now();
      await eventually('a made-up kid refused once a fetch made after it has answered', async () => verifier.verify(flood[0]!, NOW), (result) => 'valid' in result && !result.valid && result.rule === 'unknown-key', 10_000);
      const allowed = 2 + Math.ceil((performance.now() - started) / COOL_DOWN_MS);
      assert.ok(jwks.fetches - fetchesBefore <= allowed, `${jwks.fetches - fetchesBefore} fetches (at most ${allowed})`);
    } finally {
      await keys.stop();
      await jwks.close();
    }
  });

  it("never refuses a token of the issuer's new key while a flood of made-up kids spends the cool-down: undecided until the next fetch, then allowed", async () => {
    const [current, next] = await Promise.all([signingKey('current'), signingKey('next')]);
    const jwks = await JwksServer.start();
    jwks.publish([current]);
    const flood = await Promise.all(Array.from({ length: 20 }, (_, i) => signedToken(current, claims({ jti: `spent-${i}` }), { kid: `made-up-${i}` })));
    const partners = await Promise.all(Array.from({ length: 5 }, (_, i) => signedToken(next, claims({ jti: `partner-${i}` }))));
    const keys = new IssuerKeys({ jwksUrl: jwks.url, logger, unknownKeyCooldownMs: COOL_DOWN_MS });
    try {
      await keys.start();
      const verifier = new TokenVerifier(settings(jwks.url), keys, VERIFIED_TOKENS_MAX, UNBOUNDED);
      await Promise.all(flood.map((token) => verifier.verify(token, NOW)));
      // The issuer rotates: its new key is published, and its tokens arrive while the cool-down runs.
      jwks.publish([next, current]);
      const answers: string[] = [];
      await eventually(
        "every partner token of the new key allowed",
        async () => {
          const verdicts = await Promise.all(partners.map((token) => verifier.verify(token, NOW)));
          answers.push(...verdicts.map((result) => ('undecided' in result ? result.undecided : result.valid ? 'valid' : result.rule)));
          return verdicts;
        },
        (verdicts) => verdicts.every((result) => 'valid' in result && result.valid),
        10_000,
      );
      assert.deepEqual(answers.filter((answer) => answer !== 'valid' && answer !== 'unknown-kid-pending'), [], 'a token of the new key was refused');
      assert.ok(answers.includes('unknown-kid-pending'), 'the cool-down was not spent: nothing was undecided');
    } finally {
      await keys.stop();
      await jwks.close();
    }
  });

  it('keeps the last good key set when a fetch fails, and refuses tokens (keys-unavailable) before the first success', async () => {
    const key = await signingKey('steady');
    const jwks = await JwksServer.start();
    jwks.serve(503, 'unavailable');
    const keys = new IssuerKeys({ jwksUrl: jwks.url, logger, unknownKeyCooldownMs: 0, retryMs: 20 });
    try {
      await keys.start();
      assert.equal(keys.settled, true, 'the first attempt has ended, though it failed');
      await eventually('two failed fetches', async () => jwks.fetches, (fetches) => fetches >= 2, 10_000);
      assert.equal(keys.loaded, false);
      const verifier = new TokenVerifier(settings(jwks.url), keys, VERIFIED_TOKENS_MAX, UNBOUNDED);
      assert.deepEqual(verifier.verify(await signedToken(key, claims()), NOW), { valid: false, rule: 'keys-unavailable', claimant: { clientId: 'partner-1001', signed: false } });
      jwks.publish([key]);
      await eventually('the key set fetched', async () => keys.loaded, (loaded) => loaded, 10_000);
      jwks.serve(500, 'broken');
      // A made-up kid makes it fetch again, which fails: the set it had still verifies.
      await verifier.verify(await signedToken(key, claims({ jti: 'x' }), { kid: 'made-up' }), NOW);
      assert.equal(((await verifier.verify(await signedToken(key, claims({ jti: 'still' })), NOW)) as TokenVerdict).valid, true);
    } finally {
      await keys.stop();
      await jwks.close();
    }
  });

  it('refuses an oversized, malformed or empty JWKS', async () => {
    const jwks = await JwksServer.start();
    for (const body of [JSON.stringify({ keys: [], padding: 'x'.repeat(300 * 1024) }), 'not json', '{"nokeys":[]}', '{"keys":[]}']) {
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


/** A KeySetStore in memory, as token_key_sets behaves: what was saved, and how a read or write goes. */
function memoryStore(initial?: StoredKeySet) {
  const saved: Array<{ jwks: JSONWebKeySet; fetchedAt: number }> = [];
  let stored = initial;
  let failWrites = false;
  let hangReads = false;
  const store: KeySetStore = {
    load: () => (hangReads ? new Promise<never>(() => undefined) : Promise.resolve(stored)),
    async save(jwks, fetchedAt) {
      if (failWrites) throw new Error('database down');
      saved.push({ jwks, fetchedAt });
      stored = { jwks, fetchedAt };
    },
  };
  return {
    store,
    saved,
    failWrites: (fail: boolean) => (failWrites = fail),
    hangReads: () => (hangReads = true),
  };
}

describe('IssuerKeys with the last good key set kept in a store', () => {
  it('starts with the stored set while the issuer is down, dated from when it was fetched, and replaces it once the issuer answers', async () => {
    const [old, fresh] = await Promise.all([signingKey('old'), signingKey('fresh')]);
    const jwks = await JwksServer.start();
    jwks.serve(503, 'down');
    const fetchedAt = Date.now() - 3_600_000;
    const memory = memoryStore({ jwks: { keys: [old.publicJwk] }, fetchedAt });
    const keys = new IssuerKeys({ jwksUrl: jwks.url, logger, store: memory.store, retryMs: 20 });
    try {
      await keys.start();
      assert.equal(keys.loaded, true);
      assert.equal(keys.origin, 'database');
      assert.equal(keys.fetchedAt, fetchedAt);
      const verifier = new TokenVerifier(settings(jwks.url), keys, VERIFIED_TOKENS_MAX, UNBOUNDED);
      assert.equal(((await verifier.verify(await signedToken(old, claims({ jti: 'stored' })), NOW)) as TokenVerdict).valid, true);
      jwks.publish([fresh]);
      await eventually('the set of the issuer replaces the stored one', async () => keys.origin, (origin) => origin === 'issuer', 10_000);
      assert.ok((keys.fetchedAt ?? 0) > fetchedAt);
      await eventually('the fetched set written', async () => memory.saved.length, (count) => count === 1, 10_000);
      assert.deepEqual(memory.saved[0]?.jwks.keys.map((key) => key.kid), ['fresh']);
    } finally {
      await keys.stop();
      await jwks.close();
    }
  });

  it('holds a stored set to the rules of a fetched one: private members stripped, shared secrets dropped, garbage refused', async () => {
    const key = await signingKey('k1');
    const jwks = await JwksServer.start();
    jwks.serve(503, 'down');
    const privateJwk = { ...(await exportJWK(key.privateKey)), kid: 'k1', alg: 'RS256' };
    const secret = { kty: 'oct', k: 'c2VjcmV0', kid: 'k1', alg: 'HS256' };
    try {
      const withPrivate = new IssuerKeys({ jwksUrl: jwks.url, logger, store: memoryStore({ jwks: { keys: [secret, privateJwk] }, fetchedAt: Date.now() }).store });
      await withPrivate.start();
      await withPrivate.stop();
      assert.equal(withPrivate.size, 1, 'the shared secret is dropped, the RSA key kept as its public half');
      const verifier = new TokenVerifier(settings(jwks.url), withPrivate);
      assert.equal(((await verifier.verify(await signedToken(key, claims({ jti: 'stripped' })), NOW)) as TokenVerdict).valid, true);
      for (const stored of [{ jwks: { keys: [secret] }, fetchedAt: Date.now() }, { jwks: 'not a key set', fetchedAt: Date.now() }, { jwks: { keys: [key.publicJwk] }, fetchedAt: Number.NaN }]) {
        const keys = new IssuerKeys({ jwksUrl: jwks.url, logger, store: memoryStore(stored).store });
        await keys.start();
        await keys.stop();
        assert.equal(keys.loaded, false, JSON.stringify(stored));
      }
    } finally {
      await jwks.close();
    }
  });

  it('writes a fetched set without its private members, only when it changed, and verifies on when the write fails', async () => {
    const key = await signingKey('k1');
    const jwks = await JwksServer.start();
    // An issuer that publishes its private key by mistake: the database must not get a copy.
    jwks.serve(200, JSON.stringify({ keys: [{ ...(await exportJWK(key.privateKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] }));
    const memory = memoryStore();
    const keys = new IssuerKeys({ jwksUrl: jwks.url, logger, store: memory.store, unknownKeyCooldownMs: 0 });
    try {
      await keys.start();
      await eventually('the set written', async () => memory.saved.length, (count) => count === 1, 10_000);
      const written = memory.saved[0]?.jwks.keys[0] ?? {};
      assert.deepEqual(['d', 'p', 'q', 'dp', 'dq', 'qi'].filter((member) => member in written), []);
      assert.equal(written.n, key.publicJwk.n);
      const verifier = new TokenVerifier(settings(jwks.url), keys, VERIFIED_TOKENS_MAX, UNBOUNDED);
      // A made-up kid fetches the same set again: nothing new to write.
      await verifier.verify(await signedToken(key, claims({ jti: 'a' }), { kid: 'made-up' }), NOW);
      const second = await signingKey('k2');
      memory.failWrites(true);
      jwks.publish([key, second]);
      const verdict = (await verifier.verify(await signedToken(second, claims({ jti: 'b' })), NOW)) as TokenVerdict;
      assert.equal(verdict.valid, true, 'a failing write does not stand in the way of verification');
      assert.equal(memory.saved.length, 1);
    } finally {
      await keys.stop();
      await jwks.close();
    }
  });

  it('does not wait for a store that hangs beyond its time-out', async () => {
    const key = await signingKey('k1');
    const jwks = await JwksServer.start();
    jwks.publish([key]);
    const memory = memoryStore();
    memory.hangReads();
    const keys = new IssuerKeys({ jwksUrl: jwks.url, logger, store: memory.store, storeTimeoutMs: 200 });
    try {
      await keys.start();
      assert.equal(keys.origin, 'issuer');
    } finally {
      await keys.stop();
      await jwks.close();
    }
  });
});
