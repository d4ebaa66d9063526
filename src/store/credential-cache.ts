import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { canonicalSiteId } from '../decision/parse-authorization.js';
import type { CredentialSnapshot, SiteId } from '../decision/types.js';
import type { Logger } from '../observe/logger.js';
import { loadAllSites, loadSites, type SiteTable } from './snapshot-loader.js';

/** The channel the triggers of migration 002 notify; the payload is a site id, or '*' for all. */
export const CREDENTIALS_CHANNEL = 'sitekey_credentials';
export const LISTEN_APPLICATION_NAME = 'sitekey-authz-listen';

export interface CredentialCacheOptions {
  /** For the snapshot queries. */
  readonly pool: pg.Pool;
  /** A session connection for LISTEN: a transaction-mode pooler (PgBouncer) cannot hold one. */
  readonly listenUrl: string;
  /** A full resync this often, behind LISTEN/NOTIFY. */
  readonly refreshSeconds: number;
  /** Past this long without a confirmed-fresh snapshot, refuse to decide (0: never). */
  readonly maxStalenessSeconds: number;
  readonly logger: Logger;
}

export interface CacheStatus {
  readonly loaded: boolean;
  /** Loaded, and not staler than the limit: checks can be decided. */
  readonly ready: boolean;
  readonly listening: boolean;
  readonly sites: number;
  readonly lastSyncAt: string | null;
  /** How long the snapshot has gone unconfirmed: 0 while the LISTEN connection is up and synced. */
  readonly staleSeconds: number;
}

export interface SyncEvent {
  readonly kind: 'full' | 'sites';
  readonly sites: number;
  readonly durationSeconds: number;
}

const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 5_000;
const RELOAD_RETRY_MS = 1_000;
const OUTAGE_LOG_INTERVAL_MS = 10_000;

class SiteTableSnapshot implements CredentialSnapshot {
  constructor(private readonly table: SiteTable) {}
  site(siteId: SiteId) {
    return this.table.get(siteId);
  }
}

/**
 * The in-memory credential snapshot a check reads (issue #4): loaded whole at start, kept fresh by
 * LISTEN/NOTIFY one site at a time, resynced whole after every reconnect and every refreshSeconds.
 *
 * A check runs to completion without yielding, so replacing one site's entry, or swapping in a whole
 * new table, is atomic for every check: none ever sees half of a site or half of a resync.
 */
export class CredentialCache {
  private table: SiteTable | undefined;
  private snapshotView: CredentialSnapshot | undefined;
  private lastSyncAt: number | undefined;
  /** When the snapshot stopped being confirmed fresh (the LISTEN connection was lost); undefined while fresh. */
  private staleSince: number | undefined = Date.now();
  private listener: pg.Client | undefined;
  private readonly pendingSites = new Set<SiteId>();
  private reloadScheduled = false;
  /** Syncs run one at a time, so an older read can never overwrite a newer one. */
  private syncQueue: Promise<unknown> = Promise.resolve();
  private refreshTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private connecting: Promise<void> | undefined;
  private lastOutageLogAt = 0;
  private lastIgnoredLogAt = -Infinity;
  /** A full resync queued behind the running sync and not started yet. */
  private queuedFullSync: Promise<void> | undefined;
  private readonly syncListeners: Array<(event: SyncEvent) => void> = [];

  constructor(private readonly options: CredentialCacheOptions) {}

  /** Resolves once the first snapshot is loaded; retries with backoff until then (or until stop()). */
  async start(): Promise<void> {
    this.refreshTimer = setInterval(() => void this.refresh(), this.options.refreshSeconds * 1000);
    this.refreshTimer.unref();
    await this.connect();
  }

  /** The snapshot to decide on, or undefined when none is loaded or it is too stale to trust. */
  snapshot(now: number): CredentialSnapshot | undefined {
    return this.isFresh(now) ? this.snapshotView : undefined;
  }

  status(now: number): CacheStatus {
    return {
      loaded: this.table !== undefined,
      ready: this.table !== undefined && this.isFresh(now),
      listening: this.listener !== undefined,
      sites: this.table?.size ?? 0,
      lastSyncAt: this.lastSyncAt === undefined ? null : new Date(this.lastSyncAt).toISOString(),
      staleSeconds: this.staleSince === undefined ? 0 : Math.max(0, (now - this.staleSince) / 1000),
    };
  }

  /** Observers (metrics, logs) of every successful sync. */
  onSync(listener: (event: SyncEvent) => void): void {
    this.syncListeners.push(listener);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.refreshTimer);
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => undefined);
    await this.syncQueue.catch(() => undefined);
  }

  private isFresh(now: number): boolean {
    const limit = this.options.maxStalenessSeconds;
    return this.staleSince === undefined || limit === 0 || now - this.staleSince <= limit * 1000;
  }

  private serialized<T>(work: () => Promise<T>): Promise<T> {
    const next = this.syncQueue.then(work, work);
    this.syncQueue = next.catch(() => undefined);
    return next;
  }

  private emitSync(event: SyncEvent): void {
    for (const listener of this.syncListeners) {
      try {
        listener(event);
      } catch (error) {
        this.options.logger.warn({ err: error }, 'a credential sync observer failed');
      }
    }
  }

  private fullSync(): Promise<void> {
    return this.serialized(async () => {
      // From here on a change is not certain to be in this load: a new request queues another.
      this.queuedFullSync = undefined;
      const started = performance.now();
      const table = await loadAllSites(this.options.pool);
      this.table = table;
      this.snapshotView = new SiteTableSnapshot(table);
      this.lastSyncAt = Date.now();
      const durationSeconds = (performance.now() - started) / 1000;
      this.options.logger.debug({ sites: table.size, durationSeconds }, 'credential snapshot loaded');
      this.emitSync({ kind: 'full', sites: table.size, durationSeconds });
    });
  }

  /** (Re)connects the LISTEN session with backoff, then resyncs fully: notifications were lost meanwhile. */
  private connect(): Promise<void> {
    this.connecting ??= this.connectUntilSynced().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connectUntilSynced(): Promise<void> {
    let backoff = BACKOFF_MIN_MS;
    while (!this.stopped) {
      const client = new pg.Client({
        connectionString: this.options.listenUrl,
        application_name: LISTEN_APPLICATION_NAME,
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
        connectionTimeoutMillis: 5_000,
      });
      client.on('notification', (message) => this.onNotification(message.payload));
      client.on('error', (error) => this.onListenerLost(client, error));
      client.on('end', () => this.onListenerLost(client));
      try {
        await client.connect();
        await client.query(`LISTEN ${CREDENTIALS_CHANNEL}`);
        // LISTEN first, then load: a change committed in between is both loaded and notified.
        this.listener = client;
        this.pendingSites.clear();
        await this.fullSync();
        const wasStale = this.staleSince;
        this.staleSince = undefined;
        if (wasStale !== undefined && this.lastOutageLogAt > 0) {
          this.options.logger.info({ sites: this.table?.size }, 'credential database reachable again; snapshot resynced');
        }
        this.lastOutageLogAt = 0;
        return;
      } catch (error) {
        if (this.listener === client) this.listener = undefined;
        client.removeAllListeners('end');
        await client.end().catch(() => undefined);
        this.logOutage(error);
        await sleep(backoff * (0.5 + Math.random() / 2));
        backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      }
    }
  }

  private logOutage(error: unknown): void {
    const now = Date.now();
    if (now - this.lastOutageLogAt < OUTAGE_LOG_INTERVAL_MS) return;
    this.lastOutageLogAt = now;
    const status = this.status(now);
    this.options.logger.warn(
      {
        err: error instanceof Error ? { message: error.message } : String(error),
        loaded: status.loaded,
        staleSeconds: Math.round(status.staleSeconds),
        lastSyncAt: status.lastSyncAt,
        ready: status.ready,
      },
      !status.loaded
        ? 'credential database unreachable; no snapshot yet, checks answer UNAVAILABLE'
        : status.ready
          ? 'credential database unreachable; deciding from the last snapshot until SNAPSHOT_MAX_STALENESS_SECONDS'
          : 'credential database unreachable; the last snapshot is too stale, checks answer UNAVAILABLE',
    );
  }

  private onListenerLost(client: pg.Client, error?: Error): void {
    if (this.listener !== client) return;
    this.listener = undefined;
    this.staleSince ??= Date.now();
    this.options.logger.warn({ err: error ? { message: error.message } : undefined }, 'LISTEN connection lost; reconnecting');
    void client.end().catch(() => undefined);
    if (!this.stopped) void this.connect();
  }

  /**
   * Our triggers send a site id, or '*' after a TRUNCATE. Anyone who can connect may NOTIFY on the
   * channel, though: any other payload is ignored, since it must neither reach the per-site query
   * (its cast to bigint would fail that batch and every one after it) nor queue full resyncs without
   * end. The periodic resync is the safety net for whatever was meant.
   */
  private onNotification(payload: string | undefined): void {
    if (payload === '*') {
      void this.requestFullSync().catch((error: unknown) => this.options.logger.warn({ err: error }, 'full resync after a notification failed'));
      return;
    }
    const siteId = payload === undefined ? undefined : canonicalSiteId(payload);
    if (siteId === undefined) {
      const now = Date.now();
      if (now - this.lastIgnoredLogAt >= OUTAGE_LOG_INTERVAL_MS) {
        this.lastIgnoredLogAt = now;
        this.options.logger.warn({ payload: payload?.slice(0, 64) }, `ignoring a notification on ${CREDENTIALS_CHANNEL} that names no site`);
      }
      return;
    }
    this.pendingSites.add(siteId);
    this.scheduleReload(0);
  }

  /** A full resync, merged with one already waiting its turn: a burst of requests loads once more, not once each. */
  private requestFullSync(): Promise<void> {
    this.queuedFullSync ??= this.fullSync();
    return this.queuedFullSync;
  }

  /** Coalesces a burst of notifications into one reload of the sites they named. */
  private scheduleReload(delayMs: number): void {
    if (this.reloadScheduled) return;
    this.reloadScheduled = true;
    setTimeout(() => {
      this.reloadScheduled = false;
      void this.reloadPending();
    }, delayMs).unref();
  }

  private reloadPending(): Promise<void> {
    return this.serialized(async () => {
      if (this.pendingSites.size === 0 || this.table === undefined) return;
      const siteIds = [...this.pendingSites];
      this.pendingSites.clear();
      const started = performance.now();
      try {
        const loaded = await loadSites(this.options.pool, siteIds);
        for (const siteId of siteIds) {
          const site = loaded.get(siteId);
          if (site) this.table.set(siteId, site);
          else this.table.delete(siteId);
        }
        this.emitSync({ kind: 'sites', sites: siteIds.length, durationSeconds: (performance.now() - started) / 1000 });
      } catch (error) {
        for (const siteId of siteIds) this.pendingSites.add(siteId);
        this.options.logger.warn({ err: error, sites: siteIds.length }, 'reloading changed sites failed; retrying');
        this.scheduleReload(RELOAD_RETRY_MS);
      }
    });
  }

  /** The safety-net resync; a failure means the database is in trouble, so the LISTEN session is recycled too. */
  private async refresh(): Promise<void> {
    if (this.stopped || this.listener === undefined) return;
    try {
      await this.requestFullSync();
    } catch (error) {
      this.options.logger.warn({ err: error }, 'periodic credential resync failed');
      const listener = this.listener;
      if (listener) this.onListenerLost(listener, error instanceof Error ? error : undefined);
    }
  }
}
