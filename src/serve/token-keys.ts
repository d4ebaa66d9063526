import type pg from 'pg';
import type { TokenSettings } from '../config.js';
import type { Logger } from '../observe/logger.js';
import { tokenKeySetStore } from '../store/token-key-sets.js';
import type { IssuerKeys, IssuerKeysOptions, KeySetOrigin } from '../token/issuer-keys.js';
import type { TokenVerifier } from '../token/token-verifier.js';

/**
 * How serve and explain hold the issuer's keys: from TOKEN_JWKS_URL, or else from the jwks_uri of
 * TOKEN_ISSUER's discovery document, with the last good set kept in the database under the same name.
 */
export function issuerKeysOptions(settings: TokenSettings, pool: Pick<pg.Pool, 'query'>, logger: Logger): IssuerKeysOptions {
  const { jwksUrl, issuer } = settings;
  if (jwksUrl !== undefined) return { jwksUrl, setting: 'TOKEN_JWKS_URL', logger, store: tokenKeySetStore(pool, { kind: 'jwks_url', value: jwksUrl }) };
  return { issuer, setting: 'TOKEN_ISSUER', logger, store: tokenKeySetStore(pool, { kind: 'issuer', value: issuer }) };
}

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
