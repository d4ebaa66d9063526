import type { AuthMethod, SiteId } from '../decision/types.js';
import { columnsOf, deleteExpiredHours, HourlyCountsRecorder, type HourlyCountsOptions } from './periodic-flush.js';

interface Usage {
  readonly hour: number;
  readonly siteId: SiteId;
  readonly method: AuthMethod;
  count: number;
  lastSeen: number;
}

const HOUR_MS = 3_600_000;

const groupKey = (hourText: string, siteId: SiteId, method: AuthMethod): string => `${hourText} ${siteId} ${method}`;

const ADD_USAGE = `WITH expired AS (${deleteExpiredHours('auth_usage', '$6', '$7')})
                   INSERT INTO auth_usage AS u (hour, site_id, method, count, last_seen)
                   SELECT to_timestamp(v.hour / 1000.0), v.site_id, v.method, v.count, to_timestamp(v.last_seen / 1000.0)
                     FROM unnest($1::float8[], $2::bigint[], $3::text[], $4::bigint[], $5::float8[]) AS v(hour, site_id, method, count, last_seen)
                    WHERE to_timestamp(v.hour / 1000.0) >= now() - make_interval(days => $6)
                   ON CONFLICT (hour, site_id, method)
                   DO UPDATE SET count = u.count + EXCLUDED.count, last_seen = GREATEST(u.last_seen, EXCLUDED.last_seen)`;

/** Allowed requests by hour, site and method; a group beyond maxGroups is dropped and logged, never the request. */
export class AuthUsageRecorder extends HourlyCountsRecorder {
  private usage = new Map<string, Usage>();
  /** A partner's requests repeat the last group, which then costs no key. */
  private latest: Usage | undefined;
  private dropped = 0;
  /** The hour as text made once an hour, not on every allowed check. */
  private hour = { start: Number.NaN, text: '' };

  constructor(private readonly options: HourlyCountsOptions) {
    super(options, 'authentication usage counts', 'auth_usage');
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
    if (this.usage.size === 0) return this.expireIdle();
    const usage = [...this.usage.values()];
    this.usage = new Map();
    this.latest = undefined;
    await this.failures.attempt(
      () =>
        this.options.pool.query(ADD_USAGE, [
          ...columnsOf(usage, ['hour', 'siteId', 'method', 'count', 'lastSeen']),
          this.options.retentionDays,
          this.expiredRowsPerFlush,
        ]),
      () => this.restore(usage),
      { groups: usage.length },
    );
  }
}
