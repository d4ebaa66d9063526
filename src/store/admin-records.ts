import { maskApiKey } from '../decision/api-key.js';
import type { ApiKey, KeyId, SiteAuthMethod, SiteId } from '../decision/types.js';
import { instantText, optionalInstantText, type StoredTimestamp } from './timestamps.js';

export interface SiteSummary {
  readonly siteId: SiteId;
  readonly name: string;
  readonly enabled: boolean;
  readonly createdAt: string;
  readonly activeKeys: number;
  readonly allowlistEntries: number;
}

export interface SiteAccess {
  readonly siteId: SiteId;
  readonly authMethod: SiteAuthMethod;
  readonly graceUntil: string | null;
  /** Tokens issued before this are refused; null: none revoked. */
  readonly tokensNotBefore: string | null;
}

type KeyStatus = 'active' | 'expired' | 'revoked';

/** A key as an account manager may see it: masked, never the key itself. */
export interface KeySummary {
  readonly keyId: KeyId;
  readonly siteId: SiteId;
  readonly maskedKey: string;
  readonly status: KeyStatus;
  readonly createdAt: string;
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
  readonly lastUsedAt: string | null;
  readonly note: string;
}

/** The only moment the key exists outside the partner's hands. */
export interface IssuedKey extends KeySummary {
  readonly apiKey: ApiKey;
}

export interface AllowlistEntrySummary {
  readonly cidr: string;
  readonly createdAt: string;
}

export interface KeyOptions {
  readonly expiresAt: Date | undefined;
  readonly note: string;
}

/** The new key, shown once, and the old key with the end it now has. */
export interface KeyRoll {
  readonly key: IssuedKey;
  readonly replaced: { readonly keyId: KeyId; readonly maskedKey: string; readonly expiresAt: string };
  readonly warnings: readonly string[];
}

export interface KeySummaryRow {
  id: string;
  site_id: string;
  last_five: string;
  status: KeyStatus;
  created_at: StoredTimestamp;
  expires_at: StoredTimestamp | null;
  revoked_at: StoredTimestamp | null;
  last_used_at: StoredTimestamp | null;
  note: string;
}

export interface SiteSummaryRow {
  id: string;
  name: string;
  enabled: boolean;
  created_at: StoredTimestamp;
  active_keys: string;
  allowlist_entries: string;
}

export const UNIQUE_VIOLATION = '23505';

export const KEY_COLUMNS = `id::text, site_id::text, last_five, created_at, expires_at, revoked_at, last_used_at, note,
  CASE WHEN revoked_at IS NOT NULL THEN 'revoked' WHEN expires_at <= now() THEN 'expired' ELSE 'active' END AS status`;

export const SITE_SUMMARY = `SELECT s.id::text, s.name, s.enabled, s.created_at,
    (SELECT count(*) FROM api_keys k WHERE k.site_id = s.id AND k.revoked_at IS NULL
        AND (k.expires_at IS NULL OR k.expires_at > now())) AS active_keys,
    (SELECT count(*) FROM allowlist_entries a WHERE a.site_id = s.id) AS allowlist_entries
  FROM sites s`;

export function keySummary(row: KeySummaryRow): KeySummary {
  return {
    keyId: row.id,
    siteId: row.site_id,
    maskedKey: maskApiKey(row.last_five),
    status: row.status,
    createdAt: instantText(row.created_at),
    expiresAt: optionalInstantText(row.expires_at),
    revokedAt: optionalInstantText(row.revoked_at),
    lastUsedAt: optionalInstantText(row.last_used_at),
    note: row.note,
  };
}

export function siteSummary(row: SiteSummaryRow): SiteSummary {
  return {
    siteId: row.id,
    name: row.name,
    enabled: row.enabled,
    createdAt: instantText(row.created_at),
    activeKeys: Number(row.active_keys),
    allowlistEntries: Number(row.allowlist_entries),
  };
}
