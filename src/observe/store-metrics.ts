import { Histogram, type Counter, type Registry } from 'prom-client';
import { counter, each, scrapedGauge } from './metric-kinds.js';

export interface SnapshotStatus {
  /** Since the last successful sync; null before the first. */
  readonly ageSeconds: number | null;
  readonly sites: number;
  readonly activeKeys: number;
  readonly listening: boolean;
}

export interface SnapshotGauges {
  status(now: number): SnapshotStatus;
}

/** As pg.Pool exposes them. */
export interface PoolCounts {
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
}

/** A full reload, or a reload of the sites a notification named. */
export interface SyncOutcome {
  readonly kind: 'full' | 'sites';
  readonly ok: boolean;
  readonly durationSeconds: number;
  readonly sitesRead?: number;
}

// A per-site reload takes milliseconds; a full load of 100,000 sites takes seconds (bench/RESULTS.md).
const SYNC_DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30];
const SYNC_KINDS = each('kind', ['full', 'sites']);

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
    const { now, startedAt, pool } = options;
    const status = (): SnapshotStatus => options.snapshot.status(now());
    const ageSeconds = () => status().ageSeconds ?? (now() - startedAt) / 1000;
    scrapedGauge(registry, 'sitekey_authz_snapshot_age_seconds', ageSeconds,
      'Seconds since the credential snapshot was last synced successfully (since start-up, before the first sync).', 'max');
    scrapedGauge(registry, 'sitekey_authz_snapshot_sites', () => status().sites,
      'Sites in the credential snapshot, enabled or not.', 'max');
    scrapedGauge(registry, 'sitekey_authz_snapshot_active_keys', () => status().activeKeys,
      'API keys in the credential snapshot that are neither revoked nor expired.', 'max');
    scrapedGauge(registry, 'sitekey_authz_listen_connected', () => (status().listening ? 1 : 0),
      '1 while the LISTEN connection that carries credential change notifications is up, else 0.', 'min');

    this.syncs = counter(registry, 'sitekey_authz_snapshot_syncs_total', ['kind'],
      'Credential snapshot syncs attempted: kind full (every site) or sites (those a notification named).', SYNC_KINDS);
    this.sitesRead = counter(registry, 'sitekey_authz_snapshot_sites_read_total', ['kind'],
      'Sites whose rows a credential snapshot sync read and built again, by kind (full, sites): a resync that finds nothing changed reads none.');
    this.syncFailures = counter(registry, 'sitekey_authz_snapshot_sync_failures_total', ['kind'],
      'Credential snapshot syncs that failed, by kind (full, sites); the last snapshot stays in use.', SYNC_KINDS);
    this.syncDuration = new Histogram({
      name: 'sitekey_authz_snapshot_sync_duration_seconds',
      help: 'Time a successful credential snapshot sync took, by kind (full, sites).',
      labelNames: ['kind'],
      buckets: SYNC_DURATION_BUCKETS,
      registers: [registry],
    });
    this.notifications = counter(registry, 'sitekey_authz_notifications_total', [],
      'Credential change notifications received on the LISTEN connection.');
    this.rowsSkipped = counter(registry, 'sitekey_authz_snapshot_rows_skipped_total', ['table'],
      'Rows a snapshot load left out because it cannot use them (written with SQL past the CLI), by table, at each load; the log names each once.',
      each('table', ['sites', 'api_keys', 'allowlist_entries', 'brownouts']));

    scrapedGauge(registry, 'sitekey_authz_db_pool_connections', () => pool.totalCount,
      'Connections open in the database pool, busy or idle.');
    scrapedGauge(registry, 'sitekey_authz_db_pool_idle_connections', () => pool.idleCount,
      'Open connections in the database pool that are idle.');
    scrapedGauge(registry, 'sitekey_authz_db_pool_waiting_queries', () => pool.waitingCount,
      'Queries waiting for a free connection from the database pool.');

    this.lastUsedFlushes = counter(registry, 'sitekey_authz_last_used_flushes_total', [],
      'Writes of key last-used times to the database (one statement each), failed ones included.');
    this.lastUsedFlushFailures = counter(registry, 'sitekey_authz_last_used_flush_failures_total', [],
      'Writes of key last-used times that failed; the times are kept for the next write.');
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
