import type { SiteId } from '../decision/types.js';
import { maskApiKey } from '../decision/api-key.js';
import { AdminError, siteNotFound, type AdminTransactions } from './admin-transactions.js';
import { OVERFLOW_ADDRESS } from './denial-stats-recorder.js';

export interface BrownoutSummary {
  readonly brownoutId: string;
  readonly from: string;
  readonly until: string;
  /** null: every site. */
  readonly siteIds: string[] | null;
  readonly dryRun: boolean;
  readonly note: string;
  readonly createdAt: string;
  readonly cancelledAt: string | null;
  readonly state: 'scheduled' | 'running' | 'over' | 'cancelled';
}

export interface NewBrownout {
  readonly from: Date;
  readonly until: Date;
  readonly siteIds: readonly SiteId[] | null;
  readonly dryRun: boolean;
  readonly note: string;
}

/** One key that a site used in the report's window. */
export interface MigrationKeyRow {
  readonly siteId: string;
  readonly siteName: string;
  readonly keyId: string;
  readonly maskedKey: string;
  readonly lastUsedAt: string;
  readonly graceUntil: string | null;
  /** When API keys stop working for this site: the later of the sunset and its grace. */
  readonly cutoffAt: string;
  readonly daysLeft: number;
}

export interface DenialReportRow {
  readonly siteId: string;
  readonly errorId: number;
  readonly clientIp: string;
  /** Counted by a dry-run brownout: let through, would have been refused with 105. */
  readonly rehearsal: boolean;
  readonly count: number;
  readonly firstSeen: string;
  readonly lastSeen: string;
  /** On a row whose clientIp is 'other' (DENIAL_ROWS_PER_SITE_HOUR): how many addresses it stands for; else 0. */
  readonly moreAddresses: number;
}

/** `report denials`: the rows with the most refusals first, at most `limit` of them, and how many were left out. */
export interface DenialReport {
  readonly rows: readonly DenialReportRow[];
  readonly omittedRows: number;
}

interface BrownoutRow {
  id: string;
  starts_at: Date;
  ends_at: Date;
  site_ids: string[] | null;
  dry_run: boolean;
  note: string;
  created_at: Date;
  cancelled_at: Date | null;
  state: BrownoutSummary['state'];
}

const BROWNOUT_COLUMNS = `id::text, starts_at, ends_at, site_ids::text[] AS site_ids, dry_run, note, created_at, cancelled_at,
  CASE WHEN cancelled_at IS NOT NULL THEN 'cancelled' WHEN ends_at <= now() THEN 'over'
       WHEN starts_at <= now() THEN 'running' ELSE 'scheduled' END AS state`;

const DAY_MS = 86_400_000;

function brownoutSummary(row: BrownoutRow): BrownoutSummary {
  return {
    brownoutId: row.id,
    from: row.starts_at.toISOString(),
    until: row.ends_at.toISOString(),
    siteIds: row.site_ids,
    dryRun: row.dry_run,
    note: row.note,
    createdAt: row.created_at.toISOString(),
    cancelledAt: row.cancelled_at?.toISOString() ?? null,
    state: row.state,
  };
}

/**
 * The API-key sunset as account managers run it (issue #11): per-site grace, brownouts, and the
 * reports they work from. Changes are audited; the triggers carry them to every replica.
 */
export class SunsetAdmin {
  constructor(private readonly transactions: AdminTransactions) {}

  /** Sets (a Date) or clears (null) the site's grace; returns the previous value. */
  async setGrace(siteId: SiteId, until: Date | null): Promise<{ readonly siteId: SiteId; readonly graceUntil: string | null; readonly previous: string | null }> {
    return this.transactions.change(async (sql) => {
      const { rows } = await sql.query<{ previous: Date | null }>('SELECT apikey_grace_until AS previous FROM sites WHERE id = $1 FOR UPDATE', [siteId]);
      const row = rows[0];
      if (row === undefined) throw siteNotFound(siteId);
      await sql.query('UPDATE sites SET apikey_grace_until = $2, updated_at = now() WHERE id = $1', [siteId, until]);
      const graceUntil = until?.toISOString() ?? null;
      const previous = row.previous?.toISOString() ?? null;
      await this.transactions.audit(sql, until ? 'site.grace' : 'site.grace.clear', siteId, { graceUntil, previous });
      return { siteId, graceUntil, previous };
    });
  }

  async addBrownout(brownout: NewBrownout): Promise<BrownoutSummary> {
    return this.transactions.change(async (sql) => {
      if (brownout.siteIds !== null) {
        const { rows } = await sql.query<{ id: string }>('SELECT id::text FROM sites WHERE id = ANY($1::bigint[])', [brownout.siteIds]);
        const known = new Set(rows.map((row) => row.id));
        const unknown = brownout.siteIds.find((siteId) => !known.has(siteId));
        if (unknown !== undefined) throw siteNotFound(unknown);
      }
      const { rows } = await sql.query<BrownoutRow>(
        `INSERT INTO brownouts (starts_at, ends_at, site_ids, dry_run, note) VALUES ($1, $2, $3, $4, $5) RETURNING ${BROWNOUT_COLUMNS}`,
        [brownout.from, brownout.until, brownout.siteIds, brownout.dryRun, brownout.note],
      );
      const added = brownoutSummary(rows[0] as BrownoutRow);
      await this.transactions.audit(sql, 'brownout.add', null, { ...added });
      return added;
    });
  }

  async listBrownouts(): Promise<BrownoutSummary[]> {
    return this.transactions.read(async (sql) =>
      (await sql.query<BrownoutRow>(`SELECT ${BROWNOUT_COLUMNS} FROM brownouts ORDER BY starts_at, id`)).rows.map(brownoutSummary),
    );
  }

  async cancelBrownout(brownoutId: string): Promise<{ readonly brownout: BrownoutSummary; readonly changed: boolean }> {
    return this.transactions.change(async (sql) => {
      const found = await sql.query<{ cancelled: boolean }>('SELECT cancelled_at IS NOT NULL AS cancelled FROM brownouts WHERE id = $1 FOR UPDATE', [brownoutId]);
      if (found.rows[0] === undefined) {
        throw new AdminError('BROWNOUT_NOT_FOUND', `brownout ${brownoutId} does not exist; see the ids with \`sitekey-authz brownout list\``);
      }
      const changed = !found.rows[0].cancelled;
      if (changed) {
        await sql.query('UPDATE brownouts SET cancelled_at = now() WHERE id = $1', [brownoutId]);
        await this.transactions.audit(sql, 'brownout.cancel', null, { brownoutId });
      }
      const { rows } = await sql.query<BrownoutRow>(`SELECT ${BROWNOUT_COLUMNS} FROM brownouts WHERE id = $1`, [brownoutId]);
      return { brownout: brownoutSummary(rows[0] as BrownoutRow), changed };
    });
  }

  /** Every key used since `since`, most recently active site first, with what is left of its time. */
  async migrationReport(since: Date, sunsetAt: number, now: number): Promise<MigrationKeyRow[]> {
    return this.transactions.read(async (sql) => {
      const { rows } = await sql.query<{
        site_id: string;
        site_name: string;
        grace_until: Date | null;
        key_id: string;
        last_five: string;
        last_used_at: Date;
      }>(
        `SELECT s.id::text AS site_id, s.name AS site_name, s.apikey_grace_until AS grace_until,
                k.id::text AS key_id, k.last_five, k.last_used_at
           FROM api_keys k JOIN sites s ON s.id = k.site_id
          WHERE k.last_used_at >= $1
          ORDER BY max(k.last_used_at) OVER (PARTITION BY s.id) DESC, s.id, k.last_used_at DESC, k.id`,
        [since],
      );
      return rows.map((row) => {
        const cutoff = Math.max(sunsetAt, row.grace_until?.getTime() ?? -Infinity);
        return {
          siteId: row.site_id,
          siteName: row.site_name,
          keyId: row.key_id,
          maskedKey: maskApiKey(row.last_five),
          lastUsedAt: row.last_used_at.toISOString(),
          graceUntil: row.grace_until?.toISOString() ?? null,
          cutoffAt: new Date(cutoff).toISOString(),
          daysLeft: Math.max(0, Math.ceil((cutoff - now) / DAY_MS)),
        };
      });
    });
  }

  /**
   * Refusals (and dry-run rehearsals) since `since`, by site, error and client address, most first:
   * the first `limit` rows with an address, then every site's 'other' rows (a handful per site).
   */
  async denialReport(since: Date, siteId: SiteId | undefined, limit: number): Promise<DenialReport> {
    return this.transactions.read(async (sql) => {
      const { rows } = await sql.query<{
        site_id: string;
        error_id: number;
        client_ip: string;
        rehearsal: boolean;
        count: string;
        first_seen: Date;
        last_seen: Date;
        more_addresses: string;
        overflow: boolean;
        total: string;
      }>(
        `WITH grouped AS (
           SELECT site_id, error_id, client_ip, rehearsal, sum(count) AS count, min(first_seen) AS first_seen, max(last_seen) AS last_seen,
                  sum(overflow_addresses) AS more_addresses, client_ip = $4 AS overflow
             FROM denial_stats
            WHERE last_seen >= $1 AND ($2::bigint IS NULL OR site_id = $2)
            GROUP BY site_id, error_id, client_ip, rehearsal),
         addressed AS (
           SELECT *, count(*) OVER () AS total FROM grouped WHERE NOT overflow
            ORDER BY count DESC, site_id, error_id, client_ip LIMIT $3)
         SELECT site_id::text, error_id, client_ip, rehearsal, count::text, first_seen, last_seen, more_addresses::text, overflow, total::text
           FROM (SELECT * FROM addressed UNION ALL SELECT *, 0 FROM grouped WHERE overflow) shown
          ORDER BY site_id, overflow, count DESC, error_id, client_ip`,
        [since, siteId ?? null, limit, OVERFLOW_ADDRESS],
      );
      const shown = rows.filter((row) => !row.overflow).length;
      const total = Number(rows.find((row) => !row.overflow)?.total ?? 0);
      return {
        omittedRows: total - shown,
        rows: rows.map((row) => ({
          siteId: row.site_id,
          errorId: row.error_id,
          clientIp: row.client_ip,
          rehearsal: row.rehearsal,
          count: Number(row.count),
          firstSeen: row.first_seen.toISOString(),
          lastSeen: row.last_seen.toISOString(),
          moreAddresses: Number(row.more_addresses),
        })),
      };
    });
  }
}
