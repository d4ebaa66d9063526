import type { Logger } from '../observe/logger.js';
import { RateLimit } from '../common/rate-limit.js';

/** The one thing a recorder needs of a pg.Pool. */
export interface StatementRunner {
  query(text: string, values: unknown[]): Promise<unknown>;
}

/**
 * Runs a batch write every so often, one at a time, and once more on stop (SIGTERM): what the
 * recorders that keep the request path off the database (last-used times, refusal counts) share.
 */
export class PeriodicFlush {
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    seconds: number,
    private readonly write: () => Promise<void>,
  ) {
    this.timer = setInterval(() => void this.flush(), seconds * 1000);
    this.timer.unref();
  }

  /** A write after the one under way, never beside it. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(this.write);
    return this.flushing;
  }

  /** The last write. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}

/**
 * Rows past retention a recorder deletes in one flush, oldest first: a lowered retention, or a table
 * older than its setting, is worked off over many flushes instead of in one statement that would
 * outlast the statement time-out and take the batch's counts down with it.
 */
export const EXPIRED_ROWS_PER_FLUSH = 10_000;

/** The tables of hourly counts whose rows expire. */
export type HourlyCounts = 'auth_usage' | 'denial_stats' | 'token_refusal_stats';

/**
 * The statement that deletes at most `limit` rows of `table` whose hour is more than `days` days old,
 * oldest first; `days` and `limit` are the statement's parameter references, e.g. '$6'.
 */
export function deleteExpiredHours(table: HourlyCounts, days: string, limit: string): string {
  return `DELETE FROM ${table} WHERE ctid IN (SELECT ctid FROM ${table} WHERE hour < now() - make_interval(days => ${days}) ORDER BY hour LIMIT ${limit})`;
}

/** With nothing to write, how often a recorder deletes expired rows all the same: the tables count by the hour. */
const IDLE_EXPIRY_INTERVAL_MS = 3_600_000;

/**
 * A recorder's deletion of expired rows on the flushes that have nothing to write, at most once an hour:
 * a replica that refuses or allows nothing for a while must not keep rows past their retention.
 */
export class IdleExpiry {
  private readonly gate = new RateLimit(IDLE_EXPIRY_INTERVAL_MS);

  constructor(
    private readonly pool: StatementRunner,
    private readonly table: HourlyCounts,
    private readonly retentionDays: number,
    private readonly rowsPerFlush: number,
    private readonly failures: FlushFailureLog,
  ) {}

  async run(): Promise<void> {
    if (!this.gate.open()) return;
    try {
      await this.pool.query(deleteExpiredHours(this.table, '$1', '$2'), [this.retentionDays, this.rowsPerFlush]);
      this.failures.succeeded();
    } catch (error) {
      this.gate.reset();
      this.failures.failed(error, { expiredRowsOf: this.table }, 'deleting its expired rows again at the next flush');
    }
  }
}

/** While the database stays down, a failed write is logged once a minute, not at every flush. */
const FAILURE_LOG_INTERVAL_MS = 60_000;

/**
 * The log of a recorder's failed writes: the first failure at once, then at most one line a minute
 * (with how many were not logged), and one line when writing works again.
 */
export class FlushFailureLog {
  private readonly gate = new RateLimit(FAILURE_LOG_INTERVAL_MS);
  private notLogged = 0;

  constructor(
    private readonly logger: Logger,
    /** What the recorder writes, e.g. "key last-used times". */
    private readonly what: string,
  ) {}

  /**
   * Writes a batch taken out of memory: on failure the batch is handed back (`keep`), to be written
   * at the next flush, and the failure logged with `fields`. Resolves whether it was written.
   */
  async attempt(write: () => Promise<unknown>, keep: () => void, fields: Record<string, unknown>): Promise<boolean> {
    try {
      await write();
      this.succeeded();
      return true;
    } catch (error) {
      keep();
      this.failed(error, fields);
      return false;
    }
  }

  /** `then`: what happens to what failed; a batch's counts are kept for the next flush. */
  failed(error: unknown, fields: Record<string, unknown>, then = 'keeping them for the next flush'): void {
    if (!this.gate.open()) {
      this.notLogged++;
      return;
    }
    this.logger.warn({ err: error, ...fields, failuresNotLogged: this.notLogged }, `writing ${this.what} failed; ${then}`);
    this.notLogged = 0;
  }

  succeeded(): void {
    if (!this.gate.opened) return;
    this.gate.reset();
    this.notLogged = 0;
    this.logger.info(`writing ${this.what} works again`);
  }
}
