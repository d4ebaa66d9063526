import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

/** The triggers of migration 002 notify a site id, or '*' for all. */
export const CREDENTIALS_CHANNEL = 'sitekey_credentials';
export const LISTEN_APPLICATION_NAME = 'sitekey-authz-listen';

const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 5_000;

export interface ListenSessionOptions {
  readonly url: string;
  /** Bounds connecting and LISTEN: a frozen server must not hold us. */
  readonly timeoutMs: number;
  /** From now on no committed change is missed. */
  readonly onListening: () => void;
  readonly onNotification: (payload: string | undefined) => void;
  readonly onLost: (error: unknown) => void;
}

/** One LISTEN connection, reconnected with jittered backoff whenever it is lost. */
export class ListenSession {
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: ListenSessionOptions) {}

  get listening(): boolean {
    return this.client !== undefined;
  }

  start(): void {
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await Promise.race([client.end().catch(() => undefined), sleep(this.options.timeoutMs, undefined, { ref: false })]);
    }
    await this.connecting;
  }

  private connect(): Promise<void> {
    this.connecting ??= this.connectWithBackoff().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connectWithBackoff(): Promise<void> {
    let backoff = BACKOFF_MIN_MS;
    while (!this.stopped && this.client === undefined) {
      const client = new pg.Client({
        connectionString: this.options.url,
        application_name: LISTEN_APPLICATION_NAME,
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
        connectionTimeoutMillis: this.options.timeoutMs,
        query_timeout: this.options.timeoutMs,
      });
      client.on('notification', (message) => this.options.onNotification(message.payload));
      client.on('error', (error) => this.lost(client, error));
      client.on('end', () => this.lost(client, new Error('the LISTEN connection ended')));
      try {
        await client.connect();
        await client.query(`LISTEN ${CREDENTIALS_CHANNEL}`);
        if (this.stopped) throw new Error('stopped');
        this.client = client;
        this.options.onListening();
      } catch (error) {
        this.discard(client);
        if (this.stopped) return;
        this.options.onLost(error);
        await sleep(backoff * (0.5 + Math.random() / 2));
        backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      }
    }
  }

  private lost(client: pg.Client, error: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.discard(client);
    if (this.stopped) return;
    this.options.onLost(error);
    void this.connect();
  }

  /** Ends a connection without waiting: a frozen server would never answer the goodbye. */
  private discard(client: pg.Client): void {
    client.removeAllListeners('end');
    client.removeAllListeners('notification');
    client.on('error', () => undefined);
    void client.end().catch(() => undefined);
  }
}
