import type { ErrorId, SiteId } from '../decision/types.js';
import type { Logger } from '../observe/logger.js';
import type { StatementRunner } from './last-used-recorder.js';
import { FlushFailureLog, PeriodicFlush } from './periodic-flush.js';

export interface DenialStatsOptions {
  readonly pool: StatementRunner;
  readonly flushSeconds: number;
  readonly retentionDays: number;
  /** Distinct (site, error, client address) groups kept between two flushes; more go to "other". */
  readonly maxGroups: number;
  readonly logger: Logger;
}

interface Group {
  readonly siteId: SiteId;
  readonly errorId: ErrorId;
  readonly clientIp: string;
  readonly rehearsal: boolean;
  /** Let through by SHADOW_MODE; would have been refused. */
  readonly shadow: boolean;
  count: number;
  firstSeen: number;
  lastSeen: number;
}

/**
 * The site id under which refusals of unknown or disabled sites (101) are counted, all together and
 * under the address UNKNOWN_SITES_ADDRESS: the id is whatever a client sent, so it gets no group of
 * its own. No site has it (site ids are positive).
 */
export const UNKNOWN_SITES = '0';
export const UNKNOWN_SITES_ADDRESS = 'any';

/** Where refusals beyond maxGroups are counted: their site and error are kept, the address is not. */
export const OVERFLOW_ADDRESS = 'other';

// One statement per flush: the old hours go, the batch is added to its hour's rows.
const FLUSH = `WITH expired AS (DELETE FROM denial_stats WHERE hour < now() - make_interval(days => $8))
  INSERT INTO denial_stats AS d (hour, site_id, error_id, client_ip, rehearsal, shadow, count, first_seen, last_seen)
  SELECT date_trunc('hour', v.first_seen), v.site_id, v.error_id, v.client_ip, v.rehearsal, v.shadow, v.count, v.first_seen, v.last_seen
    FROM unnest($1::bigint[], $2::smallint[], $3::text[], $4::boolean[], $9::boolean[], $5::bigint[], $6::timestamptz[], $7::timestamptz[])
         AS v(site_id, error_id, client_ip, rehearsal, shadow, count, first_seen, last_seen)
  ON CONFLICT (hour, site_id, error_id, client_ip, rehearsal, shadow) DO UPDATE
     SET count = d.count + excluded.count, first_seen = LEAST(d.first_seen, excluded.first_seen),
         last_seen = GREATEST(d.last_seen, excluded.last_seen)`;

/**
 * Refusals of known sites by error and client address, for `report denials`: counted in
 * memory on the request path, written in one statement per flush. Strangers cannot grow it without
 * bound: past maxGroups a new address is counted under OVERFLOW_ADDRESS for its site and error.
 */
export class DenialStatsRecorder {
  private groups = new Map<string, Group>();
  private overflowed = 0;
  private readonly flusher: PeriodicFlush;
  private readonly failures: FlushFailureLog;

  constructor(private readonly options: DenialStatsOptions) {
    this.flusher = new PeriodicFlush(options.flushSeconds, () => this.write());
    this.failures = new FlushFailureLog(options.logger, 'refusal counts');
  }

  record(siteId: SiteId, errorId: ErrorId, clientIp: string, rehearsal: boolean, at: number, shadow = false): void {
    this.add({ siteId, errorId, clientIp, rehearsal, shadow, count: 1, firstSeen: at, lastSeen: at });
  }

  private add(counted: Group): void {
    const keyOf = (address: string) => `${counted.siteId}|${counted.errorId}|${address}|${counted.rehearsal}|${counted.shadow}`;
    let key = keyOf(counted.clientIp);
    let group = this.groups.get(key);
    if (group === undefined && this.groups.size >= this.options.maxGroups) {
      this.overflowed += counted.count;
      key = keyOf(OVERFLOW_ADDRESS);
      group = this.groups.get(key);
    }
    if (group === undefined) {
      this.groups.set(key, { ...counted, clientIp: key === keyOf(counted.clientIp) ? counted.clientIp : OVERFLOW_ADDRESS });
      return;
    }
    group.count += counted.count;
    group.firstSeen = Math.min(group.firstSeen, counted.firstSeen);
    group.lastSeen = Math.max(group.lastSeen, counted.lastSeen);
  }

  /** Groups held now, for tests and metrics. */
  get size(): number {
    return this.groups.size;
  }

  flush(): Promise<void> {
    return this.flusher.flush();
  }

  /** The last flush, for SIGTERM. */
  stop(): Promise<void> {
    return this.flusher.stop();
  }

  private async write(): Promise<void> {
    if (this.groups.size === 0) return;
    const batch = [...this.groups.values()];
    const overflowed = this.overflowed;
    this.groups = new Map();
    this.overflowed = 0;
    if (overflowed > 0) {
      this.options.logger.warn({ overflowed, groups: batch.length }, `more refusal groups than fit between flushes; the rest were counted as client address "${OVERFLOW_ADDRESS}"`);
    }
    try {
      await this.options.pool.query(FLUSH, [
        batch.map((group) => group.siteId),
        batch.map((group) => group.errorId),
        batch.map((group) => group.clientIp),
        batch.map((group) => group.rehearsal),
        batch.map((group) => group.count),
        batch.map((group) => new Date(group.firstSeen)),
        batch.map((group) => new Date(group.lastSeen)),
        this.options.retentionDays,
        batch.map((group) => group.shadow),
      ]);
      this.failures.succeeded();
    } catch (error) {
      // Kept for the next flush, as long as they fit: a database down for long must not grow it.
      for (const group of batch) this.add(group);
      this.failures.failed(error, { groups: batch.length });
    }
  }
}
