import type { ClientId, SiteId, TokenRule } from '../decision/types.js';
import { columnsOf, deleteExpiredHours, HourlyCountsRecorder, seenColumns, type HourlyCountsOptions } from './periodic-flush.js';

interface TokenRefusalStatsOptions extends HourlyCountsOptions {
  /** TOKEN_REFUSAL_ROWS_PER_SITE_HOUR unless a test says otherwise. */
  readonly maxRowsPerSiteHour?: number;
}

/** One refused token's count: the site its client is registered to, or NO_SITE. */
export interface RefusedToken {
  readonly siteId: SiteId;
  readonly clientId: ClientId;
  readonly errorId: 106 | 107;
  /** '' for a 107. */
  readonly rule: TokenRule | '';
  /** Our issuer's signature verified: the client id is not just what the sender wrote. */
  readonly signed: boolean;
}

interface Group extends RefusedToken {
  count: number;
  firstSeen: number;
  lastSeen: number;
}

/** The site id under which clients registered to no site (107) are counted. */
export const NO_SITE = '0';

/** Where the clients past the caps are counted, per site, error, rule and signature. */
export const OTHER_CLIENTS = 'other';

/** A site's own clients are few; the cap is for NO_SITE, where every signed but unregistered client id lands. */
const TOKEN_REFUSAL_ROWS_PER_SITE_HOUR = 100;

// As denial_stats': a client new to its site and hour goes to the OTHER_CLIENTS row once that hour holds
// $10 rows with a client id.
const FLUSH = `WITH expired AS (${deleteExpiredHours('token_refusal_stats', '$9', '$11')}),
  batch AS (
    SELECT date_trunc('hour', v.first_seen) AS hour, v.site_id, v.client_id, v.error_id, v.rule, v.signed, v.count, v.first_seen, v.last_seen,
           v.client_id = '${OTHER_CLIENTS}' OR EXISTS (
             SELECT 1 FROM token_refusal_stats t
              WHERE t.hour = date_trunc('hour', v.first_seen) AND t.site_id = v.site_id AND t.client_id = v.client_id) AS placed
      FROM unnest($1::bigint[], $2::text[], $3::smallint[], $4::text[], $5::boolean[], $6::bigint[], $7::timestamptz[], $8::timestamptz[])
           AS v(site_id, client_id, error_id, rule, signed, count, first_seen, last_seen)
     WHERE date_trunc('hour', v.first_seen) >= now() - make_interval(days => $9)),
  held AS (
    SELECT t.hour, t.site_id, count(DISTINCT t.client_id) AS clients FROM token_refusal_stats t
     WHERE t.client_id <> '${OTHER_CLIENTS}' AND (t.hour, t.site_id) IN (SELECT hour, site_id FROM batch)
     GROUP BY t.hour, t.site_id),
  routed AS (
    SELECT b.hour, b.site_id, b.error_id, b.rule, b.signed, b.count, b.first_seen, b.last_seen,
           CASE WHEN b.placed OR coalesce(h.clients, 0) + dense_rank() OVER (PARTITION BY b.hour, b.site_id, b.placed ORDER BY b.client_id) <= $10
                THEN b.client_id ELSE '${OTHER_CLIENTS}' END AS client_id
      FROM batch b LEFT JOIN held h ON h.hour = b.hour AND h.site_id = b.site_id)
  INSERT INTO token_refusal_stats AS t (hour, site_id, client_id, error_id, rule, signed, count, first_seen, last_seen)
  SELECT hour, site_id, client_id, error_id, rule, signed, sum(count)::bigint, min(first_seen), max(last_seen)
    FROM routed GROUP BY hour, site_id, client_id, error_id, rule, signed
  ON CONFLICT (hour, site_id, client_id, error_id, rule, signed) DO UPDATE
     SET count = t.count + excluded.count, first_seen = LEAST(t.first_seen, excluded.first_seen), last_seen = GREATEST(t.last_seen, excluded.last_seen)`;

/** Refused access tokens by their client's site, client, rule and signature; beyond maxGroups as OTHER_CLIENTS. */
export class TokenRefusalRecorder extends HourlyCountsRecorder {
  private groups = new Map<string, Group>();
  private overflowed = 0;

  constructor(private readonly options: TokenRefusalStatsOptions) {
    super(options, 'token refusal counts', 'token_refusal_stats');
  }

  record(refusal: RefusedToken, at: number): void {
    this.add({ ...refusal, count: 1, firstSeen: at, lastSeen: at });
  }

  private add(counted: Group): void {
    const keyOf = (clientId: string) => `${counted.siteId}|${clientId}|${counted.errorId}|${counted.rule}|${counted.signed}`;
    let key = keyOf(counted.clientId);
    let group = this.groups.get(key);
    if (group === undefined && this.groups.size >= this.options.maxGroups) {
      this.overflowed += counted.count;
      key = keyOf(OTHER_CLIENTS);
      group = this.groups.get(key);
    }
    if (group === undefined) {
      group = { ...counted, clientId: key === keyOf(counted.clientId) ? counted.clientId : OTHER_CLIENTS, count: 0 };
      this.groups.set(key, group);
    }
    group.count += counted.count;
    group.firstSeen = Math.min(group.firstSeen, counted.firstSeen);
    group.lastSeen = Math.max(group.lastSeen, counted.lastSeen);
  }

  /** Groups held now, for tests. */
  get size(): number {
    return this.groups.size;
  }

  protected async write(): Promise<void> {
    if (this.groups.size === 0) return this.expireIdle();
    const batch = [...this.groups.values()];
    const overflowed = this.overflowed;
    this.groups = new Map();
    this.overflowed = 0;
    if (overflowed > 0) {
      this.options.logger.warn({ overflowed, groups: batch.length }, `more token refusal groups than fit between flushes; the rest were counted as client "${OTHER_CLIENTS}"`);
    }
    // Kept for the next flush, as long as they fit: a database down for long must not grow it.
    await this.failures.attempt(
      () =>
        this.options.pool.query(FLUSH, [
          ...columnsOf(batch, ['siteId', 'clientId', 'errorId', 'rule', 'signed', 'count']),
          ...seenColumns(batch),
          this.options.retentionDays,
          this.options.maxRowsPerSiteHour ?? TOKEN_REFUSAL_ROWS_PER_SITE_HOUR,
          this.expiredRowsPerFlush,
        ]),
      () => batch.forEach((group) => this.add(group)),
      { groups: batch.length },
    );
  }
}
