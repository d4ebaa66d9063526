import type { Logger } from '../observe/logger.js';
import { RateLimit } from '../common/rate-limit.js';

export interface StatementRunner {
  query(text: string, values: unknown[]): Promise<unknown>;
}

export interface RecorderOptions {
  readonly pool: StatementRunner;
  readonly flushSeconds: number;
  readonly logger: Logger;
}

export interface HourlyCountsOptions extends RecorderOptions {
  readonly retentionDays: number;
  /** Tests lower EXPIRED_ROWS_PER_FLUSH. */
  readonly expiredRowsPerFlush?: number;
  /** Distinct groups kept between two flushes. */
  readonly maxGroups: number;
}

/** Keeps the request path off the database: `record` touches memory, `write` runs on a timer and on stop. */
export abstract class PeriodicFlush {
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();
  protected readonly failures: FlushFailureLog;

  /** `what` the recorder writes, for its log lines, e.g. "key last-used times". */
  constructor(options: RecorderOptions, what: string) {
    this.failures = new FlushFailureLog(options.logger, what);
    this.timer = setInterval(() => void this.flush(), options.flushSeconds * 1000);
    this.timer.unref();
  }

  /** A write after the one under way, never beside it. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  protected abstract write(): Promise<void>;
}

/** Per field, its values across the batch: the arrays an unnest() of the batch reads. */
export function columnsOf<T>(batch: readonly T[], fields: ReadonlyArray<keyof T>): unknown[][] {
  return fields.map((field) => batch.map((row) => row[field]));
}

/** The batch's first and last times, as the timestamptz[] an unnest() reads. */
export function seenColumns(batch: ReadonlyArray<{ readonly firstSeen: number; readonly lastSeen: number }>): Date[][] {
  return [batch.map((row) => new Date(row.firstSeen)), batch.map((row) => new Date(row.lastSeen))];
}

/** A lowered retention is worked off over many flushes, not by a statement that would outlast its time-out. */
const EXPIRED_ROWS_PER_FLUSH = 10_000;

type HourlyCounts = 'auth_usage' | 'denial_stats' | 'token_refusal_stats';

/** Deletes at most `limit` rows of `table` older than `days` days; both are parameter references, e.g. '$6'. */
export function deleteExpiredHours(table: HourlyCounts, days: string, limit: string): string {
  return `DELETE FROM ${table} WHERE ctid IN (SELECT ctid FROM ${table} WHERE hour < now() - make_interval(days => ${days}) ORDER BY hour LIMIT ${limit})`;
}

const IDLE_EXPIRY_INTERVAL_MS = 3_600_000;

/** Counts by hour in `table`; each batch's statement deletes rows past retention, and holds back a batch past it. */
export abstract class HourlyCountsRecorder extends PeriodicFlush {
  protected readonly expiredRowsPerFlush: number;
  private readonly idleExpiry = new RateLimit(IDLE_EXPIRY_INTERVAL_MS);

  constructor(
    private readonly hourly: HourlyCountsOptions,
    what: string,
    private readonly table: HourlyCounts,
  ) {
    super(hourly, what);
    this.expiredRowsPerFlush = hourly.expiredRowsPerFlush ?? EXPIRED_ROWS_PER_FLUSH;
  }

  /** At most once an hour: a replica that counts nothing for a while must not keep rows past retention. */
  protected async expireIdle(): Promise<void> {
    if (!this.idleExpiry.open()) return;
    try {
      const expired = deleteExpiredHours(this.table, '$1', '$2');
      await this.hourly.pool.query(expired, [this.hourly.retentionDays, this.expiredRowsPerFlush]);
      this.failures.succeeded();
    } catch (error) {
      this.idleExpiry.reset();
      this.failures.failed(error, { expiredRowsOf: this.table }, 'deleting its expired rows again at the next flush');
    }
  }
}

const FAILURE_LOG_INTERVAL_MS = 60_000;

/** The first failure at once, then at most one line a minute, and one when writing works again. */
class FlushFailureLog {
  private readonly gate = new RateLimit(FAILURE_LOG_INTERVAL_MS);
  private notLogged = 0;

  constructor(
    private readonly logger: Logger,
    private readonly what: string,
  ) {}

  /** Writes a batch taken out of memory; on failure hands it back (`keep`). Resolves whether it was written. */
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
