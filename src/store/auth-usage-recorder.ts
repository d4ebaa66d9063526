import type { AuthMethod, ClientId, SiteId } from '../decision/types.js';
import type { Logger } from '../observe/logger.js';
import type { StatementRunner } from './last-used-recorder.js';
import { FlushFailureLog, PeriodicFlush } from './periodic-flush.js';

export interface AuthUsageRecorderOptions {
  readonly pool: StatementRunner;
  readonly flushSeconds: number;
  readonly logger: Logger;
  /**
   * Distinct (hour, site, method) groups and token clients held between two flushes; beyond them a
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

const groupKey = (hour: number, siteId: SiteId, method: AuthMethod): string => `${hour} ${siteId} ${method}`;

// One statement per table per flush. Counts add up across replicas; last_seen keeps the later time.
const ADD_USAGE = `INSERT INTO auth_usage AS u (hour, site_id, method, count, last_seen)
                   SELECT to_timestamp(v.hour / 1000.0), v.site_id, v.method, v.count, to_timestamp(v.last_seen / 1000.0)
                     FROM unnest($1::float8[], $2::bigint[], $3::text[], $4::bigint[], $5::float8[]) AS v(hour, site_id, method, count, last_seen)
                   ON CONFLICT (hour, site_id, method)
                   DO UPDATE SET count = u.count + EXCLUDED.count, last_seen = GREATEST(u.last_seen, EXCLUDED.last_seen)`;
const CLIENT_LAST_USED = `UPDATE token_clients AS c SET last_used_at = GREATEST(c.last_used_at, to_timestamp(v.used_at / 1000.0))
                            FROM unnest($1::text[], $2::float8[]) AS v(client_id, used_at)
                           WHERE c.client_id = v.client_id`;

/**
 * Allowed requests by hour, site and method, and when each token client was last used: what the
 * migration report reads to show how much of a site's traffic has moved to tokens. `record` touches
 * memory only; a timer writes the batch, as for keys' last use.
 */
export class AuthUsageRecorder {
  private usage = new Map<string, Usage>();
  private clients = new Map<ClientId, number>();
  private dropped = 0;
  private readonly flusher: PeriodicFlush;
  private readonly failures: FlushFailureLog;

  constructor(private readonly options: AuthUsageRecorderOptions) {
    this.flusher = new PeriodicFlush(options.flushSeconds, () => this.write());
    this.failures = new FlushFailureLog(options.logger, 'authentication usage counts');
  }

  record(siteId: SiteId, method: AuthMethod, clientId: ClientId | undefined, at: number): void {
    const hour = at - (at % HOUR_MS);
    const group = groupKey(hour, siteId, method);
    const held = this.usage.get(group);
    if (held !== undefined) {
      held.count += 1;
      if (at > held.lastSeen) held.lastSeen = at;
    } else if (this.usage.size < this.options.maxGroups) {
      this.usage.set(group, { hour, siteId, method, count: 1, lastSeen: at });
    } else {
      this.dropped += 1;
    }
    if (clientId === undefined) return;
    const earlier = this.clients.get(clientId);
    if (earlier !== undefined ? at > earlier : this.clients.size < this.options.maxGroups) this.clients.set(clientId, at);
  }

  flush(): Promise<void> {
    return this.flusher.flush();
  }

  stop(): Promise<void> {
    return this.flusher.stop();
  }

  private restore(usage: readonly Usage[], clients: ReadonlyMap<ClientId, number>): void {
    for (const group of usage) {
      const key = groupKey(group.hour, group.siteId, group.method);
      const held = this.usage.get(key);
      if (held === undefined) this.usage.set(key, group);
      else {
        held.count += group.count;
        held.lastSeen = Math.max(held.lastSeen, group.lastSeen);
      }
    }
    for (const [clientId, at] of clients) this.clients.set(clientId, Math.max(at, this.clients.get(clientId) ?? at));
  }

  private async write(): Promise<void> {
    if (this.dropped > 0) {
      this.options.logger.warn({ dropped: this.dropped, maxGroups: this.options.maxGroups }, 'authentication usage groups beyond the limit were not counted');
      this.dropped = 0;
    }
    if (this.usage.size === 0 && this.clients.size === 0) return;
    const usage = [...this.usage.values()];
    const clients = this.clients;
    this.usage = new Map();
    this.clients = new Map();
    try {
      if (usage.length > 0) {
        await this.options.pool.query(ADD_USAGE, [
          usage.map((group) => group.hour),
          usage.map((group) => group.siteId),
          usage.map((group) => group.method),
          usage.map((group) => group.count),
          usage.map((group) => group.lastSeen),
        ]);
      }
      if (clients.size > 0) await this.options.pool.query(CLIENT_LAST_USED, [[...clients.keys()], [...clients.values()]]);
      this.failures.succeeded();
    } catch (error) {
      // Kept for the next flush (the two statements are separate: a failed second one may count a
      // batch twice in a report, never lose a request's last use).
      this.restore(usage, clients);
      this.failures.failed(error, { groups: usage.length });
    }
  }
}
