import type { Logger } from '../observe/logger.js';
import { RateLimit } from '../common/rate-limit.js';

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

  failed(error: unknown, fields: Record<string, unknown>): void {
    if (!this.gate.open()) {
      this.notLogged++;
      return;
    }
    this.logger.warn({ err: error, ...fields, failuresNotLogged: this.notLogged }, `writing ${this.what} failed; keeping them for the next flush`);
    this.notLogged = 0;
  }

  succeeded(): void {
    if (!this.gate.opened) return;
    this.gate.reset();
    this.notLogged = 0;
    this.logger.info(`writing ${this.what} works again`);
  }
}
