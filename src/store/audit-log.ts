import type { SiteId } from '../decision/types.js';
import type { AdminTransactions } from './admin-transactions.js';
import { recordedActor, recordedActorColumns, type RecordedActor, type RecordedActorRow } from './audit-actor.js';
import { instantText, type StoredTimestamp } from './timestamps.js';

export interface AuditEntry extends RecordedActor {
  readonly id: string;
  readonly at: string;
  readonly action: string;
  readonly siteId: SiteId | null;
  /** The site's name now; null for a change of no site, or of a site that is gone. */
  readonly siteName: string | null;
  readonly details: unknown;
}

export interface AuditQuery {
  readonly since: Date;
  /** Exclusive. */
  readonly until?: Date;
  readonly siteId: SiteId | undefined;
  /** An action (key.revoke), or a group of them (key). */
  readonly action: string | undefined;
  /** Case ignored: a part of the subject or of the verified e-mail, each apart, or of an older entry's one text. */
  readonly actor?: string;
  readonly limit: number;
  readonly beforeId?: string;
}

/** A LIKE pattern that matches the text anywhere, its wildcards taken literally. */
const containing = (text: string): string => `%${text.replace(/[\\%_]/g, (wildcard) => `\\${wildcard}`)}%`;

export class AuditLog {
  constructor(private readonly transactions: AdminTransactions) {}

  /** At most `limit` entries, newest first; `more` says whether older ones matched too. */
  async list(query: AuditQuery): Promise<{ readonly entries: AuditEntry[]; readonly more: boolean }> {
    return this.transactions.read(async (sql) => {
      const { rows } = await sql.query<RecordedActorRow & { id: string; at: StoredTimestamp; action: string; site_id: string | null; site_name: string | null; details: unknown }>(
        `SELECT a.id::text, a.at, ${recordedActorColumns('a')}, a.action, a.site_id::text, s.name AS site_name, a.details FROM audit_log a LEFT JOIN sites s ON s.id = a.site_id
          WHERE a.at >= $1 AND ($2::bigint IS NULL OR a.site_id = $2)
            AND ($3::text IS NULL OR a.action = $3 OR starts_with(a.action, $3 || '.'))
            AND ($5::bigint IS NULL OR (a.at, a.id) < (SELECT b.at, b.id FROM audit_log b WHERE b.id = $5))
            AND ($6::timestamptz IS NULL OR a.at < $6)
            AND ($7::text IS NULL OR CASE WHEN a.actor_kind IS NULL THEN a.actor ILIKE $7 ELSE a.actor_subject ILIKE $7 OR a.actor_email ILIKE $7 END)
          ORDER BY a.at DESC, a.id DESC LIMIT $4`,
        [
          query.since,
          query.siteId ?? null,
          query.action ?? null,
          query.limit + 1,
          query.beforeId ?? null,
          query.until ?? null,
          query.actor === undefined ? null : containing(query.actor),
        ],
      );
      const entries = rows.slice(0, query.limit).map((row) => ({
        id: row.id,
        at: instantText(row.at),
        ...recordedActor(row),
        action: row.action,
        siteId: row.site_id,
        siteName: row.site_name,
        details: row.details,
      }));
      return { entries, more: rows.length > query.limit };
    });
  }
}
