import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import type pg from 'pg';

// Private JWKs that never leave the issuer's process and database. A key is published `publishAheadMs` before it signs,
// so cached JWKS hold it before its first token; a retired one stays `keepAfterRetiredMs`, past its tokens' lives.

/** RFC 9068 §2.1: resource servers must support RS256, so every verifier can check these tokens. */
export const SIGNING_ALGORITHM = 'RS256';

type SigningJwk = JWK & { readonly kid: string; readonly alg: string; readonly use: 'sig' };

export interface SigningKeySet {
  readonly signingKid: string;
  /** The signing key first. */
  readonly keys: readonly SigningJwk[];
}

export interface ScheduledKey {
  readonly kid: string;
  readonly createdAt: number;
  readonly signsFrom: number;
}

export interface KeyRotationPolicy {
  readonly rotateAfterMs: number;
  readonly publishAheadMs: number;
  /** Above the longest token lifetime. */
  readonly keepAfterRetiredMs: number;
}

const DAY_MS = 86_400_000;

export const DEFAULT_KEY_ROTATION: KeyRotationPolicy = Object.freeze({
  rotateAfterMs: 30 * DAY_MS,
  publishAheadMs: DAY_MS,
  keepAfterRetiredMs: DAY_MS + 3_600_000,
});

interface KeyPlan {
  readonly signingKid: string | undefined;
  /** The signing one first, then the one that will sign next, then the retired ones. */
  readonly publishedKids: readonly string[];
  /** Make a new key that signs from this time, or undefined: none is due. */
  readonly newKeySignsFrom: number | undefined;
  readonly withdrawnKids: readonly string[];
}

/** A pure function of the keys and the time, so that every replica on one database comes to the same answer. */
export function planKeys(keys: readonly ScheduledKey[], now: number, policy: KeyRotationPolicy): KeyPlan {
  const bySigningTime = [...keys].sort((a, b) => a.signsFrom - b.signsFrom || a.createdAt - b.createdAt);
  let started = bySigningTime.filter((key) => key.signsFrom <= now);
  let pending = bySigningTime.filter((key) => key.signsFrom > now);
  // Only keys yet to sign (made by a replica whose clock runs ahead): the first of them signs now,
  // published as it is, rather than none.
  if (started.length === 0 && pending.length > 0) [started, pending] = [pending.slice(0, 1), pending.slice(1)];
  const signing = started.at(-1);
  const retired = started.slice(0, -1);
  const withdrawnKids: string[] = [];
  const keptRetired: string[] = [];
  retired.forEach((key, index) => {
    const successor = started[index + 1] as ScheduledKey;
    if (now >= successor.signsFrom + policy.keepAfterRetiredMs) withdrawnKids.push(key.kid);
    else keptRetired.push(key.kid);
  });
  let newKeySignsFrom: number | undefined;
  if (keys.length === 0) newKeySignsFrom = now;
  else if (signing !== undefined && pending.length === 0 && now >= signing.signsFrom + policy.rotateAfterMs - policy.publishAheadMs) {
    newKeySignsFrom = Math.max(now + policy.publishAheadMs, signing.signsFrom + policy.rotateAfterMs);
  }
  return {
    signingKid: signing?.kid,
    publishedKids: [...(signing ? [signing.kid] : []), ...pending.map((key) => key.kid), ...keptRetired.reverse()],
    newKeySignsFrom,
    withdrawnKids,
  };
}

// pg_advisory_xact_lock's key for the key table: "sitekey-authz issuer signing keys".
const KEYS_LOCK = 7_136_411_509_283;

async function newSigningKey(): Promise<SigningJwk> {
  const { privateKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true, modulusLength: 2048 });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, kid: await calculateJwkThumbprint(jwk), alg: SIGNING_ALGORITHM, use: 'sig' };
}

/** Every replica runs it on a timer; the advisory lock makes them take turns. */
export async function currentSigningKeys(pool: pg.Pool, policy: KeyRotationPolicy): Promise<SigningKeySet> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [KEYS_LOCK]);
    // The database's clock, one for every replica: they agree on which key signs even when theirs differ.
    const clock = await client.query<{ now: number }>('SELECT (extract(epoch FROM now()) * 1000)::float8 AS now');
    const now = clock.rows[0]?.now ?? Date.now();
    const { rows } = await client.query<{ kid: string; created_at: Date; signs_from: Date }>(
      'SELECT kid, created_at, signs_from FROM issuer_signing_keys',
    );
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

export function sameKeySet(a: SigningKeySet | undefined, b: SigningKeySet): boolean {
  return a !== undefined && a.signingKid === b.signingKid && a.keys.map((key) => key.kid).join(' ') === b.keys.map((key) => key.kid).join(' ');
}
