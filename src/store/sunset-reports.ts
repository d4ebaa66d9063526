import type { SiteAuthMethod, SiteId } from '../decision/types.js';
import { maskApiKey } from '../decision/api-key.js';
import { AdminError, type AdminTransactions } from './admin-transactions.js';
import { OVERFLOW_ADDRESS, UNKNOWN_SITES } from './denial-stats-recorder.js';
import { countsBeginOf } from './usage-impact.js';
import { epochMsOf, instantText, optionalInstantText, type StoredTimestamp } from './timestamps.js';

interface KeyCutoff {
  /** The later of the sunset and its grace. */
  readonly cutoffAt: string;
  /** null: the grace never ends ('infinity'). */
  readonly daysLeft: number | null;
}

export interface MigrationKeyRow extends KeyCutoff {
  readonly siteId: string;
  readonly siteName: string;
  readonly keyId: string;
  readonly maskedKey: string;
  readonly lastUsedAt: string;
  readonly graceUntil: string | null;
}

export interface MigrationSiteRow extends KeyCutoff {
  readonly siteId: string;
  readonly siteName: string;
  readonly authMethod: SiteAuthMethod;
  /** Allowed requests in the window, as the replicas counted them by hour (auth_usage). */
  readonly tokenRequests: number;
  readonly keyRequests: number;
  /** From 0 to 1; null without any request. */
  readonly tokenShare: number | null;
  /** At any time: its clients' last use or the hourly counts. */
  readonly lastTokenUseAt: string | null;
  readonly lastKeyUseAt: string | null;
  readonly tokenClients: number;
  /** `site auth <id> tokens` would refuse someone: the site is on both and one of its keys was used in the window. */
  readonly wouldRefuseOnTokens: boolean;
}

export interface MigrationSiteReport {
  readonly rows: MigrationSiteRow[];
  /** The first hour auth_usage holds; null: none. */
  readonly countsBegin: string | null;
  /** countsBegin when it is inside the window: the rows' request counts start there, not at `since`. */
  readonly countsBeginLate: string | undefined;
}

export interface DenialReportRow {
  /** null: unknown or disabled sites (101), counted together whatever id was sent. */
  readonly siteId: string | null;
  readonly errorId: number;
  readonly clientIp: string;
  /** Counted by a dry-run brownout: let through, would have been refused with 105. */
  readonly rehearsal: boolean;
  /** Let through by SHADOW_MODE: would have been refused with this error. */
  readonly shadow: boolean;
  readonly count: number;
  readonly firstSeen: string;
  readonly lastSeen: string;
  /** On a row whose clientIp is 'other': how many addresses it stands for; else 0. */
  readonly moreAddresses: number;
}

export interface DenialReport {
  readonly rows: readonly DenialReportRow[];
  readonly omittedRows: number;
}

const DAY_MS = 86_400_000;
/** An hour of counts covers the whole hour: a window that starts inside the first hour held is covered. */
const HOUR_MS = 3_600_000;

/** Why request counts can begin later than a report asks, for the warning every surface gives. */
export const COUNTS_BEGIN_WHY = 'serve deletes counts older than AUTH_USAGE_RETENTION_DAYS, and counted none before its first request';

function countsBeginAfter(countsBegin: string | null, since: Date): string | undefined {
  return countsBegin !== null && Date.parse(countsBegin) > since.getTime() + HOUR_MS ? countsBegin : undefined;
}

export function keyCutoff(graceUntil: StoredTimestamp | null, sunsetAt: number, now: number): KeyCutoff {
  const cutoff = Math.max(sunsetAt, graceUntil === null ? -Infinity : epochMsOf(graceUntil));
  // A grace written as 'infinity' never ends: no count of days.
  return { cutoffAt: instantText(cutoff), daysLeft: Number.isFinite(cutoff) ? Math.max(0, Math.ceil((cutoff - now) / DAY_MS)) : null };
}

/** The reports account managers run the API-key sunset from. Read only. */
export class SunsetReports {
  constructor(private readonly transactions: AdminTransactions) {}

  /** Every key used since `since`, most recently active site first, with what is left of its time. */
  async migrationReport(since: Date, sunsetAt: number, now: number): Promise<MigrationKeyRow[]> {
    return this.transactions.read(async (sql) => {
      const { rows } = await sql.query<{
        site_id: string;
        site_name: string;
        grace_until: StoredTimestamp | null;
        key_id: string;
        last_five: string;
        last_used_at: StoredTimestamp;
      }>(
        `SELECT s.id::text AS site_id, s.name AS site_name, s.apikey_grace_until AS grace_until,
                k.id::text AS key_id, k.last_five, k.last_used_at
           FROM api_keys k JOIN sites s ON s.id = k.site_id
          WHERE k.last_used_at >= $1
          ORDER BY max(k.last_used_at) OVER (PARTITION BY s.id) DESC, s.id, k.last_used_at DESC, k.id`,
        [since],
      );
      return rows.map((row) => ({
        siteId: row.site_id,
        siteName: row.site_name,
        keyId: row.key_id,
        maskedKey: maskApiKey(row.last_five),
        lastUsedAt: instantText(row.last_used_at),
        graceUntil: optionalInstantText(row.grace_until),
        ...keyCutoff(row.grace_until, sunsetAt, now),
      }));
    });
  }

  /** Sites that would refuse someone first; where the counts begin is read from the data, not from this process. */
  async migrationSiteReport(since: Date, sunsetAt: number, now: number): Promise<MigrationSiteReport> {
    return this.transactions.read(async (sql) => {
      const countsBegin = await countsBeginOf(sql);
      const { rows } = await sql.query<{
        site_id: string;
        site_name: string;
        auth_method: SiteAuthMethod;
        grace_until: StoredTimestamp | null;
        token_requests: string;
        key_requests: string;
        last_token_use: StoredTimestamp | null;
        last_key_use: StoredTimestamp | null;
        token_clients: number;
        would_refuse: boolean;
      }>(
        `WITH usage AS (
           SELECT site_id,
                  sum(count) FILTER (WHERE method = 'token' AND last_seen >= $1) AS token_requests,
                  sum(count) FILTER (WHERE method = 'api_key' AND last_seen >= $1) AS key_requests,
                  max(last_seen) FILTER (WHERE method = 'token') AS last_token_seen
             FROM auth_usage GROUP BY site_id
         ), clients AS (
           SELECT site_id, count(*)::int AS token_clients, max(last_used_at) AS last_used_at FROM token_clients GROUP BY site_id
         ), keys AS (
           SELECT site_id, max(last_used_at) AS last_used_at FROM api_keys GROUP BY site_id
         )
         SELECT * FROM (
           SELECT s.id::text AS site_id, s.id, s.name AS site_name, s.auth_method, s.apikey_grace_until AS grace_until,
                  coalesce(u.token_requests, 0)::text AS token_requests, coalesce(u.key_requests, 0)::text AS key_requests,
                  nullif(greatest(coalesce(c.last_used_at, '-infinity'), coalesce(u.last_token_seen, '-infinity')), '-infinity') AS last_token_use,
                  k.last_used_at AS last_key_use, coalesce(c.token_clients, 0) AS token_clients,
                  -- A key's last use counts too: it also covers keys used before the hourly counts existed.
                  s.auth_method = 'both' AND (coalesce(u.key_requests, 0) > 0 OR coalesce(k.last_used_at >= $1, false)) AS would_refuse
             FROM sites s
             LEFT JOIN usage u ON u.site_id = s.id
             LEFT JOIN clients c ON c.site_id = s.id
             LEFT JOIN keys k ON k.site_id = s.id
            WHERE u.token_requests > 0 OR u.key_requests > 0 OR k.last_used_at >= $1 OR c.last_used_at >= $1
         ) AS report
          ORDER BY would_refuse DESC, key_requests::bigint DESC, id`,
        [since],
      );
      const siteRows = rows.map((row): MigrationSiteRow => {
        const tokenRequests = Number(row.token_requests);
        const keyRequests = Number(row.key_requests);
        const total = tokenRequests + keyRequests;
        return {
          siteId: row.site_id,
          siteName: row.site_name,
          authMethod: row.auth_method,
          tokenRequests,
          keyRequests,
          tokenShare: total === 0 ? null : tokenRequests / total,
          lastTokenUseAt: optionalInstantText(row.last_token_use),
          lastKeyUseAt: optionalInstantText(row.last_key_use),
          tokenClients: row.token_clients,
          wouldRefuseOnTokens: row.would_refuse,
          ...keyCutoff(row.grace_until, sunsetAt, now),
        };
      });
      return { rows: siteRows, countsBegin, countsBeginLate: countsBeginAfter(countsBegin, since) };
    });
  }

  /** The first `limit` rows with an address, most first, then every site's 'other' rows. */
  async denialReport(since: Date, siteId: SiteId | undefined, limit: number): Promise<DenialReport> {
    return this.transactions.read(async (sql) => {
      if (siteId !== undefined && (await sql.query('SELECT 1 FROM sites WHERE id = $1', [siteId])).rowCount === 0) {
        throw new AdminError(
          'SITE_NOT_FOUND',
          `site ${siteId} does not exist; requests naming it are refused with 101 and counted with every unknown site`,
          undefined,
          { field: 'site', step: 'ask for the report of every site instead', cliStep: 'see `sitekey-authz site list`, or run `sitekey-authz report denials` without --site' },
        );
      }
      const { rows } = await sql.query<{
        site_id: string;
        error_id: number;
        client_ip: string;
        rehearsal: boolean;
        shadow: boolean;
        count: string;
        first_seen: StoredTimestamp;
        last_seen: StoredTimestamp;
        more_addresses: string;
        overflow: boolean;
        total: string;
      }>(
        `WITH grouped AS (
           SELECT site_id, error_id, client_ip, rehearsal, shadow, sum(count) AS count, min(first_seen) AS first_seen, max(last_seen) AS last_seen,
                  sum(overflow_addresses) AS more_addresses, client_ip = $4 AS overflow
             FROM denial_stats
            WHERE last_seen >= $1 AND ($2::bigint IS NULL OR site_id = $2)
            GROUP BY site_id, error_id, client_ip, rehearsal, shadow),
         addressed AS (
           SELECT *, count(*) OVER () AS total FROM grouped WHERE NOT overflow
            ORDER BY count DESC, site_id, error_id, client_ip LIMIT $3)
         SELECT site_id::text, error_id, client_ip, rehearsal, shadow, count::text, first_seen, last_seen, more_addresses::text, overflow, total::text
           FROM (SELECT * FROM addressed UNION ALL SELECT *, 0 FROM grouped WHERE overflow) shown
          ORDER BY site_id, overflow, count DESC, error_id, client_ip`,
        [since, siteId ?? null, limit, OVERFLOW_ADDRESS],
      );
      const shown = rows.filter((row) => !row.overflow).length;
      const total = Number(rows.find((row) => !row.overflow)?.total ?? 0);
      return {
        omittedRows: total - shown,
        rows: rows.map((row) => ({
          siteId: row.site_id === UNKNOWN_SITES ? null : row.site_id,
          errorId: row.error_id,
          clientIp: row.client_ip,
          rehearsal: row.rehearsal,
          shadow: row.shadow,
          count: Number(row.count),
          firstSeen: instantText(row.first_seen),
          lastSeen: instantText(row.last_seen),
          moreAddresses: Number(row.more_addresses),
        })),
      };
    });
  }
}
