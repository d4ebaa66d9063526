import type pg from 'pg';
import { canonicalSiteId } from '../decision/parse-authorization.js';
import type { CredentialSnapshot, SiteId, SunsetPolicy } from '../decision/types.js';
import type { Logger } from '../observe/logger.js';
import { RateLimit } from '../common/rate-limit.js';
import { Slices } from '../common/slices.js';
import { CREDENTIALS_CHANNEL, ListenSession } from './listen-session.js';
import { loadBrownouts, type UnusableRow } from './snapshot-loader.js';
import { loadSitesWithDigests, resyncSites } from './snapshot-resync.js';
import { SiteDigests, type SiteDigest } from './site-digests.js';
import { SiteTable } from './site-table.js';
import { loadSunsetPolicy } from './sunset-policy.js';
import { databaseTimeoutMs, SnapshotFreshness, warnOfOutage, type CacheStatus, type SyncEvent, type SyncFailureEvent } from './snapshot-freshness.js';

export { LISTEN_APPLICATION_NAME } from './listen-session.js';
export { databaseTimeoutMs, type CacheStatus, type SyncEvent, type SyncFailureEvent } from './snapshot-freshness.js';

export interface CredentialCacheOptions {
  /** Its connections should carry databaseTimeoutMs (see connectionPool). */
  readonly pool: pg.Pool;
  /** A session connection: a transaction-mode pooler (PgBouncer) cannot hold a LISTEN. */
  readonly listenUrl: string;
  readonly refreshSeconds: number;
  /** 0: never too stale. */
  readonly maxStalenessSeconds: number;
  readonly logger: Logger;
}

const RELOAD_RETRY_MS = 1_000;
/** Anyone who can log in may NOTIFY '*': after a full load that one started, the next waits this long. */
export const NOTIFIED_FULL_LOAD_INTERVAL_MS = 5_000;
/** More sites than this named before their reload are served by one full load instead. */
const PENDING_SITES_MAX = 10_000;
const OUTAGE_LOG_INTERVAL_MS = 10_000;

/**
 * The in-memory credential snapshot a check reads: loaded whole at start and on every reconnect, refresh,
 * renewal and '*' notification, and one site at a time on its notification. SiteTable keeps the newer read.
 */
export class CredentialCache {
  private readonly table = new SiteTable();
  private readonly digests = new SiteDigests();
  /** Sites reloaded on their own during a resync, with their digest (none: gone, unusable, or kept older). */
  private readonly reloadedDuringResync = new Map<SiteId, SiteDigest | undefined>();
  private resyncStartedAt: number | undefined;
  private readonly session: ListenSession;
  private readonly freshness: SnapshotFreshness;
  private stopped = false;
  private readonly timers: NodeJS.Timeout[] = [];

  private readonly fullLoads = new OwedRun(() => this.loadAll(), () => !this.stopped);
  private readonly brownoutReloads = new OwedRun(
    () => this.reloadBrownouts(),
    () => !this.stopped && this.freshness.loaded,
  );
  private readonly pendingSites = new Set<SiteId>();
  private siteReload: Promise<void> | undefined;
  private siteReloadRetryAt = 0;
  private lastNotifiedFullLoadAt = Number.NEGATIVE_INFINITY;
  private notifiedFullLoadTimer: NodeJS.Timeout | undefined;

  private readonly outageLog = new RateLimit(OUTAGE_LOG_INTERVAL_MS);
  /** Apart, so that the load failures of one outage do not hide that changes now wait for the resync. */
  private readonly listenLostLog = new RateLimit(OUTAGE_LOG_INTERVAL_MS);
  private readonly ignoredLog = new RateLimit(OUTAGE_LOG_INTERVAL_MS);
  private readonly syncListeners: Array<(event: SyncEvent) => void> = [];
  private readonly failureListeners: Array<(event: SyncFailureEvent) => void> = [];
  private readonly notificationListeners: Array<() => void> = [];
  private readonly unusableRowListeners: Array<(row: UnusableRow) => void> = [];
  /** Each row left out is logged once, however often it is loaded again. */
  private readonly unusableRowsSaid = new Set<string>();
  private readonly onUnusableRow = (row: UnusableRow): void => {
    const said = `${row.table} ${row.row}`;
    if (!this.unusableRowsSaid.has(said)) {
      this.unusableRowsSaid.add(said);
      this.options.logger.warn({ table: row.table, row: row.row, reason: row.reason }, 'left a row out of the credential snapshot that it cannot use; fix or delete it with SQL');
    }
    this.tell(this.unusableRowListeners, row);
  };
  private resolveStarted: () => void = () => undefined;
  /** Settled by the first successful load, or by stop(). */
  private readonly started = new Promise<void>((resolveStarted) => (this.resolveStarted = resolveStarted));

  constructor(private readonly options: CredentialCacheOptions) {
    this.freshness = new SnapshotFreshness(options.maxStalenessSeconds);
    this.session = new ListenSession({
      url: options.listenUrl,
      timeoutMs: databaseTimeoutMs(options.maxStalenessSeconds),
      // LISTEN first, then load: a change committed in between is both loaded and notified.
      onListening: () => this.fullLoads.request(),
      onNotification: (payload) => this.onNotification(payload),
      onLost: (error) => this.logOutage('LISTEN connection lost; reconnecting', error, this.listenLostLog),
    });
  }

  /** Resolves once the first snapshot is loaded; retries until then, or until stop(). */
  async start(): Promise<void> {
    this.every(this.options.refreshSeconds * 1000, () => this.fullLoads.request());
    this.every(this.freshness.tickMs(), () => this.keepCurrent());
    this.session.start();
    await this.started;
  }

  /** The snapshot to decide on, or undefined when none is loaded or it is too stale to trust. */
  snapshot(now: number): CredentialSnapshot | undefined {
    return this.freshness.isFresh(now) ? this.table : undefined;
  }

  sunsetPolicy(): SunsetPolicy | undefined {
    return this.table.sunsetPolicy;
  }

  status(now: number): CacheStatus {
    return {
      loaded: this.freshness.loaded,
      ready: this.freshness.isFresh(now),
      listening: this.session.listening,
      sites: this.table.size,
      activeKeys: this.table.activeKeys,
      lastSyncAt: this.freshness.lastSyncAt(),
      staleSeconds: this.freshness.ageSeconds(now) ?? 0,
      maxStalenessSeconds: this.options.maxStalenessSeconds,
      pendingSites: this.pendingSites.size,
    };
  }

  onSync(listener: (event: SyncEvent) => void): void {
    this.syncListeners.push(listener);
  }

  onSyncFailure(listener: (event: SyncFailureEvent) => void): void {
    this.failureListeners.push(listener);
  }

  onUnusableRowSkipped(listener: (row: UnusableRow) => void): void {
    this.unusableRowListeners.push(listener);
  }

  /** Told of every notification, acted on or not. */
  onNotificationReceived(listener: () => void): void {
    this.notificationListeners.push(listener);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.resolveStarted();
    for (const timer of this.timers) clearInterval(timer);
    clearTimeout(this.notifiedFullLoadTimer);
    await this.session.stop();
    await Promise.allSettled([this.fullLoads.running, this.siteReload, this.brownoutReloads.running]);
  }

  private every(ms: number, work: () => void): void {
    const timer = setInterval(work, ms);
    timer.unref();
    this.timers.push(timer);
  }

  private keepCurrent(): void {
    if (this.stopped) return;
    if (this.pendingSites.size > 0 && Date.now() >= this.siteReloadRetryAt) this.reloadPendingSites();
    if (this.fullLoads.running === undefined && (this.fullLoads.owed || this.freshness.renewalDue(Date.now()))) this.fullLoads.request();
  }

  /** At once if none was started for a notification lately, else one at the end of the interval. */
  private requestNotifiedFullLoad(): void {
    if (this.stopped || this.notifiedFullLoadTimer !== undefined) return;
    const waitMs = this.lastNotifiedFullLoadAt + NOTIFIED_FULL_LOAD_INTERVAL_MS - performance.now();
    const start = () => {
      this.notifiedFullLoadTimer = undefined;
      this.lastNotifiedFullLoadAt = performance.now();
      this.fullLoads.request();
    };
    if (waitMs <= 0) start();
    else this.notifiedFullLoadTimer = setTimeout(start, waitMs).unref();
  }

  /** '*' is what brownout and sunset-policy changes send: both are read again at once, the sites later. */
  private reloadBrownouts(): Promise<void> {
    const order = performance.now();
    const reads = [loadBrownouts(this.options.pool, this.onUnusableRow), loadSunsetPolicy(this.options.pool)] as const;
    return Promise.all(reads).then(
      ([brownouts, sunsetPolicy]) => this.table.replaceBrownouts(brownouts, order, sunsetPolicy),
      // The full load that follows every '*' retries it, and the staleness limit applies as ever.
      (error: unknown) => this.failed({ kind: 'sites', error }),
    );
  }

  private async loadAll(): Promise<void> {
    const startedAt = Date.now();
    const order = performance.now();
    this.reloadedDuringResync.clear();
    this.resyncStartedAt = order;
    try {
      const [resync, brownouts, sunsetPolicy] = await Promise.all([
        resyncSites(this.options.pool, this.digests, this.onUnusableRow),
        loadBrownouts(this.options.pool, this.onUnusableRow),
        loadSunsetPolicy(this.options.pool),
      ]);
      // Applied in slices, between which checks run and per-site reloads may land: those are settled last.
      const slices = new Slices();
      if (await this.table.applyResync(resync.changed, resync.removed, brownouts, order, slices, sunsetPolicy)) {
        await this.digests.takeResync(resync, slices);
        this.digests.settleReloads(resync, this.reloadedDuringResync, this.table.newerReloads(order));
      }
      this.freshness.fullLoadSucceeded(startedAt);
      this.resolveStarted();
      this.synced({ kind: 'full', sites: this.table.size, sitesRead: resync.changed.size, durationSeconds: (performance.now() - order) / 1000 });
    } catch (error) {
      // Not owed at once: the tick retries while the snapshot ages.
      this.failed({ kind: 'full', error });
    } finally {
      this.resyncStartedAt = undefined;
    }
  }

  private reloadPendingSites(): void {
    if (this.siteReload !== undefined || this.stopped || !this.freshness.loaded || this.pendingSites.size === 0) return;
    const siteIds = [...this.pendingSites];
    this.pendingSites.clear();
    this.siteReload = this.reloadSites(siteIds).finally(() => {
      this.siteReload = undefined;
      // Notifications that came in meanwhile go next, unless this reload just failed.
      if (Date.now() >= this.siteReloadRetryAt) this.reloadPendingSites();
    });
  }

  private async reloadSites(siteIds: SiteId[]): Promise<void> {
    const order = performance.now();
    try {
      const reloaded = await loadSitesWithDigests(this.options.pool, siteIds, this.onUnusableRow);
      const replaced = this.table.replaceSites(siteIds, reloaded.sites, order);
      for (const siteId of replaced) {
        // The digest goes with the rows it was read with. A site the table did not replace keeps its rows,
        // and the digest that describes them: forgotten, a later deletion of the site would go unseen.
        const digest = reloaded.sites.has(siteId) ? reloaded.digests.get(siteId) : undefined;
        if (digest === undefined) this.digests.forget(siteId);
        else this.digests.remember(siteId, digest);
        this.reloadedDuringResync.set(siteId, digest);
      }
      // Read before a running resync began, these rows may be older than what it compared and found
      // unchanged: read again, they are newer than it.
      if (this.resyncStartedAt !== undefined && order < this.resyncStartedAt) for (const siteId of replaced) this.pendingSites.add(siteId);
      this.synced({ kind: 'sites', sites: siteIds.length, sitesRead: reloaded.sites.size, durationSeconds: (performance.now() - order) / 1000 });
    } catch (error) {
      for (const siteId of siteIds) this.pendingSites.add(siteId);
      this.siteReloadRetryAt = Date.now() + RELOAD_RETRY_MS;
      this.failed({ kind: 'sites', error });
    }
  }

  /**
   * Our triggers send a site id, or '*'. Anyone who can connect may NOTIFY, though: another payload is
   * ignored, as its cast to bigint would fail every per-site batch after it.
   */
  private onNotification(payload: string | undefined): void {
    this.tell(this.notificationListeners, undefined);
    if (payload === '*') {
      // Brownouts notify '*' on every change, and a cancelled one must let requests through within
      // a second: their few rows are read at once, the rest waits for its turn.
      this.brownoutReloads.request();
      this.requestNotifiedFullLoad();
      return;
    }
    const siteId = payload === undefined ? undefined : canonicalSiteId(payload);
    if (siteId === undefined) {
      if (this.ignoredLog.open()) {
        this.options.logger.warn({ payload: payload?.slice(0, 64) }, `ignoring a notification on ${CREDENTIALS_CHANNEL} that names no site`);
      }
      return;
    }
    this.pendingSites.add(siteId);
    if (this.pendingSites.size > PENDING_SITES_MAX) {
      // A full load reads these sites too, and costs no more than a query naming this many.
      this.pendingSites.clear();
      this.requestNotifiedFullLoad();
      return;
    }
    // The notifications of one transaction arrive together: one reload for the lot.
    queueMicrotask(() => this.reloadPendingSites());
  }

  private synced(event: SyncEvent): void {
    if (this.outageLog.opened) {
      this.outageLog.reset();
      this.options.logger.info({ kind: event.kind, sites: this.table.size }, 'credential database answering again; snapshot synced');
    }
    this.options.logger.debug(event, 'credential snapshot synced');
    this.tell(this.syncListeners, event);
  }

  private failed(event: SyncFailureEvent): void {
    this.logOutage(event.kind === 'full' ? 'loading the credential snapshot failed' : 'reloading changed sites failed', event.error);
    this.tell(this.failureListeners, event);
  }

  /** One that throws is logged, and the others still hear of it. */
  private tell<E>(listeners: ReadonlyArray<(event: E) => void>, event: E): void {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        this.options.logger.warn({ err: error }, 'a credential sync observer failed');
      }
    }
  }

  private logOutage(what: string, error: unknown, limit: RateLimit = this.outageLog): void {
    if (this.stopped || !limit.open()) return;
    warnOfOutage(this.options.logger, what, error, this.status(Date.now()));
  }
}

/** Runs `work` now, or once more right after the run under way: a change may have committed after it began. */
class OwedRun {
  running: Promise<void> | undefined;
  owed = false;

  constructor(
    private readonly work: () => Promise<void>,
    private readonly allowed: () => boolean,
  ) {}

  request(): void {
    if (!this.allowed()) return;
    if (this.running !== undefined) {
      this.owed = true;
      return;
    }
    this.owed = false;
    this.running = this.work().finally(() => {
      this.running = undefined;
      if (this.owed) this.request();
    });
  }
}
