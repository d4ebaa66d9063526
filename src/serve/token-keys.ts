import type { IssuerKeys, KeySetOrigin } from '../token/issuer-keys.js';
import type { TokenVerifier } from '../token/token-verifier.js';

/**
 * Seconds since the key set held was fetched from the issuer (for a set read from the database,
 * since whoever stored it fetched it); NaN while none is held, which no threshold compares true
 * against: the refusals counted as keys-unavailable say that instead.
 */
export function tokenKeysAgeSeconds(keys: Pick<IssuerKeys, 'fetchedAt'>, now: number): number {
  const fetchedAt = keys.fetchedAt;
  return fetchedAt === undefined ? Number.NaN : Math.max(0, now - fetchedAt) / 1000;
}

export interface TokenKeysStatus {
  readonly loaded: boolean;
  readonly keys: number;
  /** Where the set held came from: this process's fetch, or the database at start; null: none held. */
  readonly from: KeySetOrigin | null;
  readonly ageSeconds: number | null;
  readonly verifiedTokensKept: number;
}

/** The token keys' part of /readyz's detail. */
export function tokenKeysStatus(keys: IssuerKeys, verifier: TokenVerifier, now: number): TokenKeysStatus {
  const age = tokenKeysAgeSeconds(keys, now);
  return {
    loaded: keys.loaded,
    keys: keys.size,
    from: keys.origin ?? null,
    ageSeconds: Number.isNaN(age) ? null : Math.round(age),
    verifiedTokensKept: verifier.size,
  };
}

/** What the "ready" log line says of the issuer's keys. */
export function tokenKeysReadyWords(keys: IssuerKeys | undefined): string {
  if (keys === undefined) return '';
  if (keys.origin === 'issuer') return "; the token issuer's keys fetched";
  if (keys.origin === 'database') return "; the token issuer unreachable, its last good keys read from the database";
  return "; the token issuer's keys unavailable, so tokens are refused (106, keys-unavailable) until they are fetched";
}
