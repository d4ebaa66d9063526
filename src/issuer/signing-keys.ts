import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import type pg from 'pg';
import { planKeys, type KeyRotationPolicy } from './key-schedule.js';

/**
 * The issuer's signing keys in issuer_signing_keys (migration 011): made here, private JWKs that
 * never leave the issuer's process and its database (no route shows them, no log line names more
 * than a kid). Every replica runs `currentSigningKeys` on a timer; the transaction's advisory lock
 * makes them take turns, so one makes each new key and all agree on which key signs.
 */

/** RFC 9068 §2.1: resource servers must support RS256, so every verifier can check these tokens. */
export const SIGNING_ALGORITHM = 'RS256';

/** A private signing key as oidc-provider's `jwks` setting takes it. */
export type SigningJwk = JWK & { readonly kid: string; readonly alg: string; readonly use: 'sig' };

export interface SigningKeySet {
  readonly signingKid: string;
  /** Published in the JWKS, the signing key first. */
  readonly keys: readonly SigningJwk[];
}

// pg_advisory_xact_lock's key for the key table: "sitekey-authz issuer signing keys".
const KEYS_LOCK = 7_136_411_509_283;

async function newSigningKey(): Promise<SigningJwk> {
  const { privateKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true, modulusLength: 2048 });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, kid: await calculateJwkThumbprint(jwk), alg: SIGNING_ALGORITHM, use: 'sig' };
}

interface KeyRow {
  readonly kid: string;
  readonly created_at: Date;
  readonly signs_from: Date;
}

/**
 * Makes the key that is due (the first one, or the next one a rotation publishes ahead), withdraws
 * those no valid token can need, and resolves to the keys to publish and the one that signs now.
 */
export async function currentSigningKeys(pool: pg.Pool, policy: KeyRotationPolicy): Promise<SigningKeySet> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [KEYS_LOCK]);
    // The database's clock, one for every replica: they agree on which key signs even when theirs differ.
    const clock = await client.query<{ now: number }>('SELECT (extract(epoch FROM now()) * 1000)::float8 AS now');
    const now = clock.rows[0]?.now ?? Date.now();
    const { rows } = await client.query<KeyRow>('SELECT kid, created_at, signs_from FROM issuer_signing_keys');
    const scheduled = rows.map((row) => ({ kid: row.kid, createdAt: row.created_at.getTime(), signsFrom: row.signs_from.getTime() }));
    let plan = planKeys(scheduled, now, policy);
    if (plan.newKeySignsFrom !== undefined) {
      const key = await newSigningKey();
      await client.query('INSERT INTO issuer_signing_keys (kid, private_jwk, created_at, signs_from) VALUES ($1, $2, $3, $4)', [
        key.kid,
        JSON.stringify(key),
        new Date(now),
        new Date(plan.newKeySignsFrom),
      ]);
      plan = planKeys([...scheduled, { kid: key.kid, createdAt: now, signsFrom: plan.newKeySignsFrom }], now, policy);
    }
    if (plan.withdrawnKids.length > 0) await client.query('DELETE FROM issuer_signing_keys WHERE kid = ANY($1)', [plan.withdrawnKids]);
    const published = await client.query<{ kid: string; private_jwk: SigningJwk }>('SELECT kid, private_jwk FROM issuer_signing_keys WHERE kid = ANY($1)', [
      plan.publishedKids,
    ]);
    await client.query('COMMIT');
    const byKid = new Map(published.rows.map((row) => [row.kid, row.private_jwk]));
    const keys = plan.publishedKids.map((kid) => byKid.get(kid)).filter((key): key is SigningJwk => key !== undefined);
    if (plan.signingKid === undefined || keys[0]?.kid !== plan.signingKid) throw new Error('the issuer_signing_keys table holds no key that can sign now');
    return { signingKid: plan.signingKid, keys };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** Whether two key sets publish the same keys and sign with the same one. */
export function sameKeySet(a: SigningKeySet | undefined, b: SigningKeySet): boolean {
  return a !== undefined && a.signingKid === b.signingKid && a.keys.map((key) => key.kid).join(' ') === b.keys.map((key) => key.kid).join(' ');
}
