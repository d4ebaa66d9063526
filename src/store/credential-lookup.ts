import type pg from 'pg';
import type { ClientId, KeyHash, KeyId, SiteId } from '../decision/types.js';
import type { StoredTimestamp } from './timestamps.js';

/** Rows as they are now, for `explain` to say why a decision went as it did; never used to decide. */
export interface SiteRecord {
  readonly siteId: SiteId;
  readonly name: string;
  readonly enabled: boolean;
  /** The allowlist as PostgreSQL writes it, IPv4 first. */
  readonly allowlist: readonly string[];
}

export interface KeyRecord {
  readonly keyId: KeyId;
  readonly siteId: SiteId;
  readonly revokedAt: StoredTimestamp | null;
  readonly expiresAt: StoredTimestamp | null;
}

export async function findSite(pool: pg.Pool, siteId: SiteId): Promise<SiteRecord | undefined> {
  const { rows } = await pool.query<{ id: string; name: string; enabled: boolean; allowlist: string[] }>(
    `SELECT s.id::text, s.name, s.enabled,
            array(SELECT a.cidr::text FROM allowlist_entries a WHERE a.site_id = s.id ORDER BY family(a.cidr), a.cidr) AS allowlist
       FROM sites s WHERE s.id = $1`,
    [siteId],
  );
  const row = rows[0];
  return row === undefined ? undefined : { siteId: row.id, name: row.name, enabled: row.enabled, allowlist: row.allowlist };
}

/** The key with this hash, whichever site it belongs to and whatever its state. */
export async function findKey(pool: pg.Pool, keyHash: KeyHash): Promise<KeyRecord | undefined> {
  const { rows } = await pool.query<{ id: string; site_id: string; revoked_at: StoredTimestamp | null; expires_at: StoredTimestamp | null }>(
    "SELECT id::text, site_id::text, revoked_at, expires_at FROM api_keys WHERE key_sha256 = decode($1, 'hex')",
    [keyHash],
  );
  const row = rows[0];
  return row === undefined ? undefined : { keyId: row.id, siteId: row.site_id, revokedAt: row.revoked_at, expiresAt: row.expires_at };
}

export async function findTokenClient(pool: pg.Pool, clientId: ClientId): Promise<{ readonly clientId: ClientId; readonly siteId: SiteId } | undefined> {
  const { rows } = await pool.query<{ site_id: string }>('SELECT site_id::text FROM token_clients WHERE client_id = $1', [clientId]);
  const row = rows[0];
  return row === undefined ? undefined : { clientId, siteId: row.site_id };
}
