import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The credential snapshot as the metrics see it: read at each scrape. */
export interface SnapshotStatus {
  /** Seconds since the last successful sync; null before the first. */
  readonly ageSeconds: number | null;
  readonly sites: number;
  /** Keys in the snapshot that are neither revoked nor expired. */
  readonly activeKeys: number;
  /** The LISTEN connection that carries change notifications is up. */
  readonly listening: boolean;
}

export interface SnapshotGauges {
  status(now: number): SnapshotStatus;
}

/** What pg.Pool exposes about its connections. */
export interface PoolCounts {
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
}

/** One sync of the credential snapshot: a full reload, or a reload of the sites a notification named. */
export interface SyncOutcome {
  readonly kind: 'full' | 'sites';
  readonly ok: boolean;
  readonly durationSeconds: number;
  /** Sites whose rows a successful sync read and built again. */
  readonly sitesRead?: number;
}

// A per-site reload takes milliseconds; a full load of 100,000 sites takes seconds (bench/RESULTS.md).
const SYNC_DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30];

/** The metrics of the credential snapshot and the database behind it: its state read at each scrape, its syncs, the pool, the last-used writes. */
export class StoreMetrics {
  private readonly syncs: Counter<'kind'>;
  private readonly sitesRead: Counter<'kind'>;
  private readonly syncFailures: Counter<'kind'>;
  private readonly syncDuration: Histogram<'kind'>;
  private readonly notifications: Counter;
  private readonly rowsSkipped: Counter<'table'>;
  private readonly lastUsedFlushes: Counter;
  private readonly lastUsedFlushFailures: Counter;

  constructor(registry: Registry, options: { readonly snapshot: SnapshotGauges; readonly pool: PoolCounts; readonly now: () => number; readonly startedAt: number }) {
    const registers = [registry];
    const { now, startedAt } = options;
    const snapshotStatus = (): SnapshotStatus => options.snapshot.status(now());
    new Gauge({
      name: 'sitekey_authz_snapshot_age_seconds',
      aggregator: 'max',
      help: 'Seconds since the credential snapshot was last synced successfully (since start-up, before the first sync).',
      registers,
      collect() {
        const { ageSeconds } = snapshotStatus();
        this.set(ageSeconds ?? (now() - startedAt) / 1000);
      },
    });
    new Gauge({
      name: 'sitekey_authz_snapshot_sites',
      aggregator: 'max',
      help: 'Sites in the credential snapshot, enabled or not.',
      registers,
      collect() {
        this.set(snapshotStatus().sites);
      },
    });
    new Gauge({
      name: 'sitekey_authz_snapshot_active_keys',
      aggregator: 'max',
      help: 'API keys in the credential snapshot that are neither revoked nor expired.',
      registers,
      collect() {
        this.set(snapshotStatus().activeKeys);
      },
    });
    new Gauge({
      name: 'sitekey_authz_listen_connected',
      aggregator: 'min',
      help: '1 while the LISTEN connection that carries credential change notifications is up, else 0.',
      registers,
      collect() {
        this.set(snapshotStatus().listening ? 1 : 0);
      },
    });

    this.syncs = new Counter({
      name: 'sitekey_authz_snapshot_syncs_total',
      help: 'Credential snapshot syncs attempted: kind full (every site) or sites (those a notification named).',
      labelNames: ['kind'],
      registers,
    });
    this.sitesRead = new Counter({
      name: 'sitekey_authz_snapshot_sites_read_total',
      help: 'Sites whose rows a credential snapshot sync read and built again, by kind (full, sites): a resync that finds nothing changed reads none.',
      labelNames: ['kind'],
      registers,
    });
    this.syncFailures = new Counter({
      name: 'sitekey_authz_snapshot_sync_failures_total',
      help: 'Credential snapshot syncs that failed, by kind (full, sites); the last snapshot stays in use.',
      labelNames: ['kind'],
      registers,
    });
    this.syncDuration = new Histogram({
      name: 'sitekey_authz_snapshot_sync_duration_seconds',
      help: 'Time a successful credential snapshot sync took, by kind (full, sites).',
      labelNames: ['kind'],
      buckets: SYNC_DURATION_BUCKETS,
      registers,
    });
    for (const kind of ['full', 'sites']) {
      this.syncs.inc({ kind }, 0);
      this.syncFailures.inc({ kind }, 0);
    }
    this.notifications = new Counter({
      name: 'sitekey_authz_notifications_total',
      help: 'Credential change notifications received on the LISTEN connection.',
      registers,
    });
    this.rowsSkipped = new Counter({
      name: 'sitekey_authz_snapshot_rows_skipped_total',
      help: 'Rows a snapshot load left out because it cannot use them (written with SQL past the CLI), by table, at each load; the log names each once.',
      labelNames: ['table'],
      registers,
    });
    for (const table of ['sites', 'api_keys', 'allowlist_entries', 'brownouts']) this.rowsSkipped.inc({ table }, 0);

    new Gauge({
      name: 'sitekey_authz_db_pool_connections',
      help: 'Connections open in the database pool, busy or idle.',
      registers,
      collect() {
        this.set(options.pool.totalCount);
      },
    });
    new Gauge({
      name: 'sitekey_authz_db_pool_idle_connections',
      help: 'Open connections in the database pool that are idle.',
      registers,
      collect() {
        this.set(options.pool.idleCount);
      },
    });
    new Gauge({
      name: 'sitekey_authz_db_pool_waiting_queries',
      help: 'Queries waiting for a free connection from the database pool.',
      registers,
      collect() {
        this.set(options.pool.waitingCount);
      },
    });

    this.lastUsedFlushes = new Counter({
      name: 'sitekey_authz_last_used_flushes_total',
      help: 'Writes of key last-used times to the database (one statement each), failed ones included.',
      registers,
    });
    this.lastUsedFlushFailures = new Counter({
      name: 'sitekey_authz_last_used_flush_failures_total',
      help: 'Writes of key last-used times that failed; the times are kept for the next write.',
      registers,
    });
  }

  onSync(outcome: SyncOutcome): void {
    this.syncs.inc({ kind: outcome.kind });
    if (outcome.ok) {
      this.syncDuration.observe({ kind: outcome.kind }, outcome.durationSeconds);
      this.sitesRead.inc({ kind: outcome.kind }, outcome.sitesRead ?? 0);
    } else this.syncFailures.inc({ kind: outcome.kind });
  }

  onNotification(): void {
    this.notifications.inc();
  }

  onRowSkipped(table: string): void {
    this.rowsSkipped.inc({ table });
  }

  onLastUsedFlush(outcome: { readonly ok: boolean }): void {
    this.lastUsedFlushes.inc();
    if (!outcome.ok) this.lastUsedFlushFailures.inc();
  }
}
