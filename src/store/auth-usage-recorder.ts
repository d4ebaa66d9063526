import type { AuthMethod, SiteId } from '../decision/types.js';
import { columnsOf, deleteExpiredHours, EXPIRED_ROWS_PER_FLUSH, IdleExpiry, PeriodicFlush, type RecorderOptions } from './periodic-flush.js';

export interface AuthUsageRecorderOptions extends RecorderOptions {
  /** AUTH_USAGE_RETENTION_DAYS. */
  readonly retentionDays: number;
  /** Tests lower EXPIRED_ROWS_PER_FLUSH. */
  readonly expiredRowsPerFlush?: number;
  /** Beyond them a group is dropped and logged, never the request; only allowed requests add groups. */
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

const groupKey = (hourText: string, siteId: SiteId, method: AuthMethod): string => `${hourText} ${siteId} ${method}`;

// A batch held past retention is not written: it would meet its own deleted row.
const ADD_USAGE = `WITH expired AS (${deleteExpiredHours('auth_usage', '$6', '$7')})
                   INSERT INTO auth_usage AS u (hour, site_id, method, count, last_seen)
                   SELECT to_timestamp(v.hour / 1000.0), v.site_id, v.method, v.count, to_timestamp(v.last_seen / 1000.0)
                     FROM unnest($1::float8[], $2::bigint[], $3::text[], $4::bigint[], $5::float8[]) AS v(hour, site_id, method, count, last_seen)
                    WHERE to_timestamp(v.hour / 1000.0) >= now() - make_interval(days => $6)
                   ON CONFLICT (hour, site_id, method)
                   DO UPDATE SET count = u.count + EXCLUDED.count, last_seen = GREATEST(u.last_seen, EXCLUDED.last_seen)`;

/** Allowed requests by hour, site and method: how much of a site's traffic has moved to tokens. */
export class AuthUsageRecorder extends PeriodicFlush {
  private usage = new Map<string, Usage>();
  /** A partner's requests repeat the last group, which then costs no key. */
  private latest: Usage | undefined;
  private dropped = 0;
  /** The hour as text made once an hour, not on every allowed check. */
  private hour = { start: Number.NaN, text: '' };
  private readonly idleExpiry: IdleExpiry;

  constructor(private readonly options: AuthUsageRecorderOptions) {
    super(options, 'authentication usage counts');
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

  protected async write(): Promise<void> {
    if (this.dropped > 0) {
      this.options.logger.warn({ dropped: this.dropped, maxGroups: this.options.maxGroups }, 'authentication usage groups beyond the limit were not counted');
      this.dropped = 0;
    }
    if (this.usage.size === 0) return this.idleExpiry.run();
    const usage = [...this.usage.values()];
    this.usage = new Map();
    this.latest = undefined;
    await this.failures.attempt(
      () =>
        this.options.pool.query(ADD_USAGE, [
          ...columnsOf(usage, ['hour', 'siteId', 'method', 'count', 'lastSeen']),
          this.options.retentionDays,
          this.options.expiredRowsPerFlush ?? EXPIRED_ROWS_PER_FLUSH,
        ]),
      () => this.restore(usage),
      { groups: usage.length },
    );
  }
}
