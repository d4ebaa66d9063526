import assert from 'node:assert/strict';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/observe/logger.js';
import { IssuerKeys } from '../src/token/issuer-keys.js';
import { TokenVerifier, type TokenOutcome } from '../src/token/token-verifier.js';
import { VerificationBudget } from '../src/token/verification-budget.js';
import { JwksServer, signedToken, signingKey } from '../test/support/jwks-server.js';
import { BENCH_TOKEN_AUDIENCE, BENCH_TOKEN_ISSUER } from './bench-issuer.js';

/** Distinct tokens verified per algorithm (after as many again to warm up), and loops over one kept token. */
const NEW_TOKENS = 1_000;
const KEPT_LOOPS = 200_000;
const ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'] as const;

const valid = (verdict: TokenOutcome | undefined): boolean => verdict !== undefined && 'valid' in verdict && verdict.valid;

/**
 * What a token costs `serve` in TokenVerifier.verify, the step before decide(): a token seen for the
 * first time is verified by jose (the JWS header, the signature against the issuer's key, the claims),
 * a kept one is found by the SHA-256 of its text. The issuer's JWKS is fetched once from loopback
 * before anything is timed, so no figure holds a fetch. Tokens are minted before timing, too.
 */
export async function runTokenVerifyBench(): Promise<void> {
  const keys = await Promise.all(ALGORITHMS.map((alg, index) => signingKey(`bench-${index}`, alg)));
  const jwks = await JwksServer.start();
  jwks.publish(keys);
  const issuerKeys = new IssuerKeys({ jwksUrl: jwks.url, logger: createLogger('silent') });
  try {
    await issuerKeys.start();
    const tokens = loadConfig({ TOKEN_ISSUER: BENCH_TOKEN_ISSUER, TOKEN_AUDIENCE: BENCH_TOKEN_AUDIENCE, TOKEN_JWKS_URL: jwks.url }).tokens;
    assert.ok(tokens);
    // What a signature check costs, not what serve's budget for them lets through: that is abuse.js's forged-tokens row.
    const unbounded = { burst: Number.MAX_SAFE_INTEGER, perSecond: Number.MAX_SAFE_INTEGER };
    const budget = new VerificationBudget({ perAddress: unbounded, overall: unbounded });
    const verifier = new TokenVerifier(tokens, issuerKeys, ALGORITHMS.length * NEW_TOKENS * 2 + 1, budget);
    const now = Math.floor(Date.now() / 1000);
    const mint = (index: number, key: (typeof keys)[number]) =>
      signedToken(key, {
        iss: BENCH_TOKEN_ISSUER,
        aud: BENCH_TOKEN_AUDIENCE,
        sub: 'bench-partner',
        client_id: 'bench-partner',
        iat: now,
        exp: now + 3_600,
        jti: `${key.kid}-${index}`,
      });

    for (const key of keys) {
      const fresh: string[] = [];
      for (let i = 0; i < NEW_TOKENS * 2; i++) fresh.push(await mint(i, key));
      const warm = fresh.slice(0, NEW_TOKENS);
      const timed = fresh.slice(NEW_TOKENS);
      for (const token of warm) assert.ok(valid(await verifier.verify(token, Date.now())), `${key.alg}: a warm-up token was refused`);
      const started = process.hrtime.bigint();
      // One at a time, as a new partner's first request is: the figure is each verification's own cost.
      for (const token of timed) assert.ok(valid(await verifier.verify(token, Date.now())), `${key.alg}: a new token was refused`);
      const micros = Number(process.hrtime.bigint() - started) / 1e3 / timed.length;
      console.log(`TokenVerifier.verify, a first-seen ${key.alg} token (signature checked by jose): ${micros.toFixed(1)} µs each (${timed.length} tokens)`);
    }

    const kept = await mint(-1, keys[0]!);
    assert.ok(valid(await verifier.verify(kept, Date.now())));
    for (let i = 0; i < 20_000; i++) verifier.verify(kept, Date.now());
    const started = process.hrtime.bigint();
    for (let i = 0; i < KEPT_LOOPS; i++) {
      const verdict = verifier.verify(kept, Date.now());
      // Synchronous and valid on every loop: a kept token costs no promise and no signature check.
      assert.ok(!(verdict instanceof Promise) && valid(verdict), 'the kept token was not answered at once');
    }
    const micros = Number(process.hrtime.bigint() - started) / 1e3 / KEPT_LOOPS;
    console.log(`TokenVerifier.verify, a kept token (SHA-256 of its ${kept.length} characters, a Map lookup): ${micros.toFixed(2)} µs each (${KEPT_LOOPS.toLocaleString('en')} loops)`);
  } finally {
    await issuerKeys.stop();
    await jwks.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runTokenVerifyBench();
