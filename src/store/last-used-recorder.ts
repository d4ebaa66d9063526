import { PeriodicFlush, type RecorderOptions } from './periodic-flush.js';

/** API keys by id (the default), or token clients by client id. */
export type LastUsedOf = 'api_keys' | 'token_clients';

export interface LastUsedRecorderOptions extends RecorderOptions {
  readonly of?: LastUsedOf;
  /** Told after each write (metrics): whether it succeeded. */
  readonly onFlush?: (outcome: { readonly ok: boolean; readonly keys: number }) => void;
}

// GREATEST keeps a newer time another replica wrote.
const FLUSH: Readonly<Record<LastUsedOf, string>> = {
  api_keys: `UPDATE api_keys AS k SET last_used_at = GREATEST(k.last_used_at, v.used_at)
               FROM unnest($1::bigint[], $2::timestamptz[]) AS v(id, used_at)
              WHERE k.id = v.id`,
  token_clients: `UPDATE token_clients AS c SET last_used_at = GREATEST(c.last_used_at, v.used_at)
                    FROM unnest($1::text[], $2::timestamptz[]) AS v(client_id, used_at)
                   WHERE c.client_id = v.client_id`,
};
const WHAT: Readonly<Record<LastUsedOf, string>> = { api_keys: 'key last-used times', token_clients: 'token client last-used times' };

/** Only allowed checks record, so only registered ids can be held. */
export class LastUsedRecorder extends PeriodicFlush {
  private pending = new Map<string, number>();
  private readonly of: LastUsedOf;

  constructor(private readonly options: LastUsedRecorderOptions) {
    super(options, WHAT[options.of ?? 'api_keys']);
    this.of = options.of ?? 'api_keys';
  }

  record(id: string, at: number): void {
    const earlier = this.pending.get(id);
    if (earlier === undefined || at > earlier) this.pending.set(id, at);
  }

  protected async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const ok = await this.failures.attempt(
      () => this.options.pool.query(FLUSH[this.of], [[...batch.keys()], [...batch.values()].map((at) => new Date(at))]),
      () => batch.forEach((at, id) => this.record(id, at)),
      { keys: batch.size },
    );
    try {
      this.options.onFlush?.({ ok, keys: batch.size });
    } catch (error) {
      this.options.logger.warn({ err: error }, 'a last-used flush observer failed');
    }
  }
}
