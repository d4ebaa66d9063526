import type pg from 'pg';
import type { SiteAuthMethod, SiteId } from '../decision/types.js';
import { refuseUnknownSites, siteNotFound, type AdminTransactions } from './admin-transactions.js';
import { optionalInstantText, type StoredTimestamp } from './timestamps.js';

/** The numbers a confirmation names before an action refuses someone ("site 1001 sent 1,414 API-key requests"). */
export interface SiteImpact {
  readonly siteId: SiteId;
  readonly days: number;
  /** Allowed requests in the window, as auth_usage counted them. */
  readonly keyRequests: number;
  readonly tokenRequests: number;
  readonly allowlistSize: number;
  readonly activeKeys: number;
  readonly tokenClients: number;
  readonly enabled: boolean;
  readonly authMethod: SiteAuthMethod;
  /** null: none held. The counts begin there when it is inside the window. */
  readonly countsBegin: string | null;
}

export interface BrownoutImpact {
  readonly days: number;
  /** Sites covered that accept API keys, enabled, with no grace at the brownout's start. */
  readonly sites: number;
  /** Of those, the sites that sent API-key requests in the window, and how many. */
  readonly sitesUsingKeys: number;
  readonly keyRequests: number;
  readonly countsBegin: string | null;
}

/** An hour's counts are in the window when its last request is (as in the migration report). */
const WINDOW_USAGE = `SELECT site_id,
    coalesce(sum(count) FILTER (WHERE method = 'api_key'), 0)::text AS key_requests,
    coalesce(sum(count) FILTER (WHERE method = 'token'), 0)::text AS token_requests
  FROM auth_usage WHERE last_seen >= $1 GROUP BY site_id`;

export async function countsBeginOf(sql: pg.ClientBase): Promise<string | null> {
  const first = await sql.query<{ hour: StoredTimestamp | null }>('SELECT min(hour) AS hour FROM auth_usage');
  return optionalInstantText(first.rows[0]?.hour ?? null);
}

export class UsageImpact {
  constructor(private readonly transactions: AdminTransactions) {}

  async site(siteId: SiteId, since: Date, days: number): Promise<SiteImpact> {
    return this.transactions.read(async (sql) => {
      const { rows } = await sql.query<{
        enabled: boolean;
        auth_method: SiteAuthMethod;
        key_requests: string | null;
        token_requests: string | null;
        allowlist_size: number;
        active_keys: number;
        token_clients: number;
      }>(
        `WITH usage AS (${WINDOW_USAGE})
         SELECT s.enabled, s.auth_method, u.key_requests, u.token_requests,
                (SELECT count(*)::int FROM allowlist_entries a WHERE a.site_id = s.id) AS allowlist_size,
                (SELECT count(*)::int FROM api_keys k WHERE k.site_id = s.id AND k.revoked_at IS NULL
                    AND (k.expires_at IS NULL OR k.expires_at > now())) AS active_keys,
                (SELECT count(*)::int FROM token_clients c WHERE c.site_id = s.id) AS token_clients
           FROM sites s LEFT JOIN usage u ON u.site_id = s.id
          WHERE s.id = $2`,
        [since, siteId],
      );
      const row = rows[0];
      if (row === undefined) throw siteNotFound(siteId);
      return {
        siteId,
        days,
        keyRequests: Number(row.key_requests ?? 0),
        tokenRequests: Number(row.token_requests ?? 0),
        allowlistSize: row.allowlist_size,
        activeKeys: row.active_keys,
        tokenClients: row.token_clients,
        enabled: row.enabled,
        authMethod: row.auth_method,
        countsBegin: await countsBeginOf(sql),
      };
    });
  }

  /** `siteIds` null: every site. An unknown id is refused, as adding the brownout would be. */
  async brownout(siteIds: readonly SiteId[] | null, startsAt: Date, since: Date, days: number): Promise<BrownoutImpact> {
    return this.transactions.read(async (sql) => {
      if (siteIds !== null) await refuseUnknownSites(sql, siteIds, 'sites');
      const { rows } = await sql.query<{ sites: number; sites_using_keys: number; key_requests: string }>(
        `WITH usage AS (${WINDOW_USAGE})
         SELECT count(*)::int AS sites,
                count(*) FILTER (WHERE coalesce(u.key_requests::bigint, 0) > 0)::int AS sites_using_keys,
                coalesce(sum(u.key_requests::bigint), 0)::text AS key_requests
           FROM sites s LEFT JOIN usage u ON u.site_id = s.id
          WHERE s.enabled AND s.auth_method = 'both'
            AND (s.apikey_grace_until IS NULL OR s.apikey_grace_until <= $2)
            AND ($3::bigint[] IS NULL OR s.id = ANY($3::bigint[]))`,
        [since, startsAt, siteIds],
      );
      const row = rows[0];
      return {
        days,
        sites: row?.sites ?? 0,
        sitesUsingKeys: row?.sites_using_keys ?? 0,
        keyRequests: Number(row?.key_requests ?? 0),
        countsBegin: await countsBeginOf(sql),
      };
    });
  }
}
