/**
 * When the issuer's signing keys are made, sign, and are withdrawn: a pure function of the keys held
 * and the time, so that every replica on one database comes to the same answer (signing-keys.ts runs
 * it under one lock and acts on it).
 *
 * A key is published in the JWKS as soon as it exists, and begins to sign `publishAheadMs` later, so
 * that a verifier holding a cached JWKS has it before the first token it signs arrives. After a newer
 * key begins to sign, the old one stays published for `keepAfterRetiredMs`, longer than any token it
 * signed can live, so that no valid token stops verifying. The first key signs at once: there is
 * nothing yet that a verifier could have cached.
 */

export interface ScheduledKey {
  readonly kid: string;
  /** Epoch ms. */
  readonly createdAt: number;
  /** Epoch ms; the newest key whose time has come signs. */
  readonly signsFrom: number;
}

export interface KeyRotationPolicy {
  /** How long a key signs before its successor takes over. */
  readonly rotateAfterMs: number;
  /** How long a new key is published before it signs. */
  readonly publishAheadMs: number;
  /** How long a key stays published after its successor took over: above the longest token lifetime. */
  readonly keepAfterRetiredMs: number;
}

const DAY_MS = 86_400_000;

/** A key signs for 30 days; its successor is published a day ahead; the old one stays published a day and an hour after. */
export const DEFAULT_KEY_ROTATION: KeyRotationPolicy = Object.freeze({
  rotateAfterMs: 30 * DAY_MS,
  publishAheadMs: DAY_MS,
  keepAfterRetiredMs: DAY_MS + 3_600_000,
});

export interface KeyPlan {
  /** The key that signs now; undefined only before the first key exists. */
  readonly signingKid: string | undefined;
  /** Every key to publish, the signing one first, then the one that will sign next, then the retired ones. */
  readonly publishedKids: readonly string[];
  /** Make a new key that signs from this time (epoch ms), or undefined: none is due. */
  readonly newKeySignsFrom: number | undefined;
  /** Keys withdrawn: no token they signed can still be valid. */
  readonly withdrawnKids: readonly string[];
}

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
