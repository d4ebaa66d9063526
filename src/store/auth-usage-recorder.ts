import type { AuthMethod, SiteId } from '../decision/types.js';
import type { Logger } from '../observe/logger.js';
import type { StatementRunner } from './periodic-flush.js';
import { deleteExpiredHours, EXPIRED_ROWS_PER_FLUSH, FlushFailureLog, IdleExpiry, PeriodicFlush } from './periodic-flush.js';

export interface AuthUsageRecorderOptions {
  readonly pool: StatementRunner;
  readonly flushSeconds: number;
  /** AUTH_USAGE_RETENTION_DAYS: hours older than this are deleted as each flush writes. */
  readonly retentionDays: number;
  /** Tests lower EXPIRED_ROWS_PER_FLUSH. */
  readonly expiredRowsPerFlush?: number;
  readonly logger: Logger;
  /**
   * Distinct (hour, site, method) groups held between two flushes; beyond them a
   * group is dropped and logged, never the request. Only allowed requests are recorded, so only
   * holders of valid credentials can add groups.
   */
  readonly maxGroups: number;
}

interface Usage {
  readonly hour: number;
  readonly siteId: SiteId;
  readonly method: AuthMethod;
  count: number;
  lastSeen: number;
}

const HOUR_MS = 3_600_000;

/** A group's key; record() passes the hour's text made once an hour, restore() makes it. */
const groupKey = (hourText: string, siteId: SiteId, method: AuthMethod): string => `${hourText} ${siteId} ${method}`;

// One statement per flush: at most $7 rows of the hours past retention go (a batch held that long is
// not written: it would meet its own deleted row), and the batch is added. Counts add up across
// replicas; last_seen keeps the later time.
const ADD_USAGE = `WITH expired AS (${deleteExpiredHours('auth_usage', '$6', '$7')})
                   INSERT INTO auth_usage AS u (hour, site_id, method, count, last_seen)
                   SELECT to_timestamp(v.hour / 1000.0), v.site_id, v.method, v.count, to_timestamp(v.last_seen / 1000.0)
                     FROM unnest($1::float8[], $2::bigint[], $3::text[], $4::bigint[], $5::float8[]) AS v(hour, site_id, method, count, last_seen)
                    WHERE to_timestamp(v.hour / 1000.0) >= now() - make_interval(days => $6)
                   ON CONFLICT (hour, site_id, method)
                   DO UPDATE SET count = u.count + EXCLUDED.count, last_seen = GREATEST(u.last_seen, EXCLUDED.last_seen)`;

/**
 * Allowed requests by hour, site and method: what the migration report reads to show how much of a
 * site's traffic has moved to tokens. `record` touches memory only; a timer writes the batch, as for
 * last use (LastUsedRecorder, which also keeps the token clients').
 */
export class AuthUsageRecorder {
  private usage = new Map<string, Usage>();
  /** The group the last allowed request went to: a partner's requests repeat it, and then cost no key. */
  private latest: Usage | undefined;
  private dropped = 0;
  private hour = { start: Number.NaN, text: '' };
  private readonly flusher: PeriodicFlush;
  private readonly failures: FlushFailureLog;
  private readonly idleExpiry: IdleExpiry;

  constructor(private readonly options: AuthUsageRecorderOptions) {
    this.flusher = new PeriodicFlush(options.flushSeconds, () => this.write());
    this.failures = new FlushFailureLog(options.logger, 'authentication usage counts');
    this.idleExpiry = new IdleExpiry(options.pool, 'auth_usage', options.retentionDays, options.expiredRowsPerFlush ?? EXPIRED_ROWS_PER_FLUSH, this.failures);
  }

  record(siteId: SiteId, method: AuthMethod, at: number): void {
    const hour = at - (at % HOUR_MS);
    const latest = this.latest;
    if (latest !== undefined && latest.hour === hour && latest.siteId === siteId && latest.method === method) {
      latest.count += 1;
      if (at > latest.lastSeen) latest.lastSeen = at;
      return;
    }
    // The hour as text once an hour rather than on every allowed check.
    if (hour !== this.hour.start) this.hour = { start: hour, text: String(hour) };
    const group = groupKey(this.hour.text, siteId, method);
    const held = this.usage.get(group);
    if (held !== undefined) {
      held.count += 1;
      if (at > held.lastSeen) held.lastSeen = at;
      this.latest = held;
    } else if (this.usage.size < this.options.maxGroups) {
      this.latest = { hour, siteId, method, count: 1, lastSeen: at };
      this.usage.set(group, this.latest);
    } else {
      this.dropped += 1;
    }
  }

  flush(): Promise<void> {
    return this.flusher.flush();
  }

  stop(): Promise<void> {
    return this.flusher.stop();
  }

  private restore(usage: readonly Usage[]): void {
    for (const group of usage) {
      const key = groupKey(String(group.hour), group.siteId, group.method);
      const held = this.usage.get(key);
      if (held === undefined) this.usage.set(key, group);
      else {
        held.count += group.count;
        held.lastSeen = Math.max(held.lastSeen, group.lastSeen);
      }
    }
  }

  private async write(): Promise<void> {
    if (this.dropped > 0) {
      this.options.logger.warn({ dropped: this.dropped, maxGroups: this.options.maxGroups }, 'authentication usage groups beyond the limit were not counted');
      this.dropped = 0;
    }
    if (this.usage.size === 0) return this.idleExpiry.run();
    const usage = [...this.usage.values()];
    this.usage = new Map();
    this.latest = undefined;
    // Kept for the next flush.
    await this.failures.attempt(
      () =>
        this.options.pool.query(ADD_USAGE, [
          usage.map((group) => group.hour),
          usage.map((group) => group.siteId),
          usage.map((group) => group.method),
          usage.map((group) => group.count),
          usage.map((group) => group.lastSeen),
          this.options.retentionDays,
          this.options.expiredRowsPerFlush ?? EXPIRED_ROWS_PER_FLUSH,
        ]),
      () => this.restore(usage),
      { groups: usage.length },
    );
  }
}
