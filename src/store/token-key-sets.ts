import type pg from 'pg';
import type { JSONWebKeySet } from 'jose';
import type { TokenSettings } from '../config.js';
import type { Logger } from '../observe/logger.js';
import { KEY_SET_MAX_BYTES, type IssuerKeysOptions, type KeySetStore, type StoredKeySet } from '../token/issuer-keys.js';
import { UNDEFINED_TABLE } from './database.js';

/** Where a key set comes from: the configured JWKS URL, or the issuer whose discovery names it. */
export type KeySetSource = { readonly kind: 'jwks_url' | 'issuer'; readonly value: string };

/**
 * The issuer's last good key set; a write never replaces a set fetched later by another process. Before the
 * migration ran (a rolling upgrade) there is nothing to read, and writes fail into IssuerKeys' log line.
 */
export function tokenKeySetStore(pool: Pick<pg.Pool, 'query'>, source: KeySetSource): KeySetStore {
  return {
    async load(): Promise<StoredKeySet | undefined> {
      let rows: Array<{ jwks: string | null; fetched_at_ms: number }>;
      try {
        ({ rows } = await pool.query<{ jwks: string | null; fetched_at_ms: number }>(
          `SELECT CASE WHEN octet_length(jwks::text) <= $3 THEN jwks::text END AS jwks,
                  (extract(epoch FROM fetched_at) * 1000)::float8 AS fetched_at_ms
             FROM token_key_sets WHERE source_kind = $1 AND source = $2`,
          [source.kind, source.value, KEY_SET_MAX_BYTES],
        ));
      } catch (error) {
        if ((error as { code?: unknown }).code === UNDEFINED_TABLE) return undefined;
        throw error;
      }
      const row = rows[0];
      if (row === undefined) return undefined;
      if (row.jwks === null) throw new Error(`the stored key set is larger than ${KEY_SET_MAX_BYTES} bytes`);
      return { jwks: JSON.parse(row.jwks) as unknown, fetchedAt: row.fetched_at_ms };
    },
    async save(jwks: JSONWebKeySet, fetchedAt: number): Promise<void> {
      await pool.query(
        // A process whose clock runs ahead would freeze the row with a future time: none is later than the database's now.
        `INSERT INTO token_key_sets (source_kind, source, jwks, fetched_at) VALUES ($1, $2, $3::jsonb, LEAST($4::timestamptz, now()))
           ON CONFLICT (source_kind, source) DO UPDATE SET jwks = EXCLUDED.jwks, fetched_at = EXCLUDED.fetched_at, stored_at = now()
           WHERE token_key_sets.fetched_at < EXCLUDED.fetched_at`,
        [source.kind, source.value, JSON.stringify(jwks), new Date(fetchedAt)],
      );
    },
  };
}

/** From TOKEN_JWKS_URL, or the jwks_uri of TOKEN_ISSUER's discovery document. */
export function issuerKeysOptions(settings: TokenSettings, pool: Pick<pg.Pool, 'query'>, logger: Logger): IssuerKeysOptions {
  const { jwksUrl, issuer } = settings;
  if (jwksUrl !== undefined) return { jwksUrl, setting: 'TOKEN_JWKS_URL', logger, store: tokenKeySetStore(pool, { kind: 'jwks_url', value: jwksUrl }) };
  return { issuer, setting: 'TOKEN_ISSUER', logger, store: tokenKeySetStore(pool, { kind: 'issuer', value: issuer }) };
}
