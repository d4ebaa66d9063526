import type { IssuerKeys } from '../token/issuer-keys.js';
import type { TokenVerifier } from '../token/token-verifier.js';

/** Since the set held was fetched (by whoever stored it); NaN, which no alert threshold matches, while none is held. */
export function tokenKeysAgeSeconds(keys: Pick<IssuerKeys, 'fetchedAt'>, now: number): number {
  const fetchedAt = keys.fetchedAt;
  return fetchedAt === undefined ? Number.NaN : Math.max(0, now - fetchedAt) / 1000;
}

/** The token keys' part of /readyz's detail. */
export function tokenKeysStatus(keys: IssuerKeys, verifier: TokenVerifier, now: number) {
  const age = tokenKeysAgeSeconds(keys, now);
  return {
    loaded: keys.loaded,
    keys: keys.size,
    from: keys.origin ?? null,
    ageSeconds: Number.isNaN(age) ? null : Math.round(age),
    verifiedTokensKept: verifier.size,
  };
}

export function tokenKeysReadyWords(keys: IssuerKeys | undefined): string {
  if (keys === undefined) return '';
  if (keys.origin === 'issuer') return "; the token issuer's keys fetched";
  if (keys.origin === 'database') return "; the token issuer unreachable, its last good keys read from the database";
  return "; the token issuer's keys unavailable, so tokens are refused (106, keys-unavailable) until they are fetched";
}
