import type { KeyId } from '../decision/types.js';
import type { Logger } from '../observe/logger.js';
import { FlushFailureLog, PeriodicFlush } from './periodic-flush.js';

/** The one thing the recorder needs of a pg.Pool. */
export interface StatementRunner {
  query(text: string, values: unknown[]): Promise<unknown>;
}

export interface LastUsedRecorderOptions {
  readonly pool: StatementRunner;
  readonly flushSeconds: number;
  readonly logger: Logger;
  /** Told after each write (metrics): whether it succeeded. */
  readonly onFlush?: (outcome: { readonly ok: boolean; readonly keys: number }) => void;
}

// One statement per flush, whatever the number of keys; GREATEST keeps a newer time another replica wrote.
const FLUSH = `UPDATE api_keys AS k SET last_used_at = GREATEST(k.last_used_at, v.used_at)
                 FROM unnest($1::bigint[], $2::timestamptz[]) AS v(id, used_at)
                WHERE k.id = v.id`;

/**
 * When each key was last used, for account managers and the migration report. `record`
 * only touches memory, so the request path never waits on the database; a timer writes the batch.
 */
export class LastUsedRecorder {
  private pending = new Map<KeyId, number>();
  private readonly flusher: PeriodicFlush;
  private readonly failures: FlushFailureLog;

  constructor(private readonly options: LastUsedRecorderOptions) {
    this.flusher = new PeriodicFlush(options.flushSeconds, () => this.write());
    this.failures = new FlushFailureLog(options.logger, 'key last-used times');
  }

  record(keyId: KeyId, at: number): void {
    const earlier = this.pending.get(keyId);
    if (earlier === undefined || at > earlier) this.pending.set(keyId, at);
  }

  /** Writes what was recorded since the last flush; on failure keeps it for the next one. */
  flush(): Promise<void> {
    return this.flusher.flush();
  }

  /** The last flush, for SIGTERM. */
  stop(): Promise<void> {
    return this.flusher.stop();
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    let ok = true;
    try {
      await this.options.pool.query(FLUSH, [[...batch.keys()], [...batch.values()].map((at) => new Date(at))]);
      this.failures.succeeded();
    } catch (error) {
      ok = false;
      for (const [keyId, at] of batch) this.record(keyId, at);
      this.failures.failed(error, { keys: batch.size });
    }
    try {
      this.options.onFlush?.({ ok, keys: batch.size });
    } catch (error) {
      this.options.logger.warn({ err: error }, 'a last-used flush observer failed');
    }
  }
}
