import type { SiteId } from '../decision/types.js';
import type { AdminTransactions } from './admin-transactions.js';
import { instantText, type StoredTimestamp } from './timestamps.js';

/** One administrative change: who, what, when, on which site, and its details as recorded. */
export interface AuditEntry {
  readonly id: string;
  readonly at: string;
  readonly actor: string;
  readonly action: string;
  readonly siteId: SiteId | null;
  readonly details: unknown;
}

export interface AuditQuery {
  readonly since: Date;
  readonly siteId: SiteId | undefined;
  /** An action (key.revoke), or a group of them (key). */
  readonly action: string | undefined;
  readonly limit: number;
  /** Only entries older than this one (its id): where the previous page ended. */
  readonly beforeId?: string;
}

/** The audit trail every change writes in its own transaction, read newest first. */
export class AuditLog {
  constructor(private readonly transactions: AdminTransactions) {}

  /** At most `limit` entries, newest first; `more` says whether older ones matched too. */
  async list(query: AuditQuery): Promise<{ readonly entries: AuditEntry[]; readonly more: boolean }> {
    return this.transactions.read(async (sql) => {
      const { rows } = await sql.query<{ id: string; at: StoredTimestamp; actor: string; action: string; site_id: string | null; details: unknown }>(
        `SELECT id::text, at, actor, action, site_id::text, details FROM audit_log
          WHERE at >= $1 AND ($2::bigint IS NULL OR site_id = $2)
            AND ($3::text IS NULL OR action = $3 OR starts_with(action, $3 || '.'))
            AND ($5::bigint IS NULL OR (at, id) < (SELECT b.at, b.id FROM audit_log b WHERE b.id = $5))
          ORDER BY at DESC, id DESC LIMIT $4`,
        [query.since, query.siteId ?? null, query.action ?? null, query.limit + 1, query.beforeId ?? null],
      );
      const entries = rows.slice(0, query.limit).map((row) => ({
        id: row.id,
        at: instantText(row.at),
        actor: row.actor,
        action: row.action,
        siteId: row.site_id,
        details: row.details,
      }));
      return { entries, more: rows.length > query.limit };
    });
  }
}
