import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { PACKAGE_ROOT } from '../paths.js';
import type { CheckEvent, UndecidedCheckEvent } from './check-event.js';
import { CheckMetrics } from './check-metrics.js';
import { StoreMetrics, type PoolCounts, type SnapshotGauges, type SyncOutcome } from './store-metrics.js';

export { SHADOW_DENIED } from './check-metrics.js';
export { OTHER_SITE } from './site-labels.js';
export type { PoolCounts, SnapshotGauges, SnapshotStatus, SyncOutcome } from './store-metrics.js';

export interface ServiceMetricsOptions {
  /** METRICS_SITE_LABELS_MAX: how many sites get a series of their own. */
  readonly siteLabelsMax: number;
  readonly snapshot: SnapshotGauges;
  readonly pool: PoolCounts;
  /** The service would answer checks now (what /readyz says). */
  readonly ready: () => boolean;
  readonly now?: () => number;
  readonly version?: string;
  /** The sunset in force, epoch ms (a function: it lives in the database): exported so that alerts can compare traffic with it. */
  readonly apiKeySunsetAt: number | (() => number);
}

// prom-client's gauges of the same name without "_total" carry the same count by type; promtool
// rejects "_total" on a gauge.
const DEFAULT_METRICS_PROMTOOL_REJECTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}

/**
 * Every metric the service exposes on /metrics, declared once, in its own registry (tests make
 * several). Observers feed it events; gauges of state are read at scrape time.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly checks: CheckMetrics;
  private readonly store: StoreMetrics;
  private tokenKeyFetches: Counter<'result'> | undefined;

  constructor(options: ServiceMetricsOptions) {
    const registers = [this.registry];
    const now = options.now ?? Date.now;
    const startedAt = now();

    collectDefaultMetrics({ register: this.registry });
    for (const name of DEFAULT_METRICS_PROMTOOL_REJECTS) this.registry.removeSingleMetric(name);

    new Gauge({
      name: 'sitekey_authz_build_info',
      aggregator: 'first',
      help: 'Always 1; the labels name the running version of sitekey-authz and of Node.js.',
      labelNames: ['version', 'node_version'],
      registers,
    }).set({ version: options.version ?? packageVersion(), node_version: process.versions.node }, 1);

    // Registered in this order, so that /metrics lists them as it always has.
    this.checks = new CheckMetrics(this.registry, options);
    new Gauge({
      name: 'sitekey_authz_ready',
      aggregator: 'min',
      help: '1 while the service answers checks (credential snapshot loaded and fresh, not shutting down), else 0.',
      registers,
      collect() {
        this.set(options.ready() ? 1 : 0);
      },
    });
    this.store = new StoreMetrics(this.registry, { snapshot: options.snapshot, pool: options.pool, now, startedAt });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The text exposition format, for /metrics. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  observeCheck(event: CheckEvent): void {
    this.checks.observeCheck(event);
  }

  onIncompleteRequestReset(): void {
    this.checks.onIncompleteRequestReset();
  }

  observeUndecided(event: UndecidedCheckEvent): void {
    this.checks.observeUndecided(event);
  }

  onSync(outcome: SyncOutcome): void {
    this.store.onSync(outcome);
  }

  onNotification(): void {
    this.store.onNotification();
  }

  /** Gauges of the token verifier's state, read at each scrape. */
  followTokenKeys(state: { readonly keys: () => number; readonly ageSeconds: () => number; readonly verifiedTokens: () => number }): void {
    const registers = [this.registry];
    new Gauge({
      name: 'sitekey_authz_token_issuer_keys',
      help: "Signing keys in the token issuer's key set held now; 0 while none is held (tokens are then refused, keys-unavailable).",
      registers,
      collect() {
        this.set(state.keys());
      },
    });
    new Gauge({
      name: 'sitekey_authz_token_issuer_keys_age_seconds',
      help: "Seconds since the key set held was fetched from the token issuer (a set read from the database at start: since it was fetched and stored); NaN while none is held.",
      registers,
      collect() {
        this.set(state.ageSeconds());
      },
    });
    new Gauge({
      name: 'sitekey_authz_token_verified_cached',
      help: 'Access tokens whose signature was verified and that are kept (by hash, until their exp) so that repeats cost no signature check.',
      registers,
      collect() {
        this.set(state.verifiedTokens());
      },
    });
    this.tokenKeyFetches = new Counter({
      name: 'sitekey_authz_token_issuer_key_fetches_total',
      help: "Fetches of the token issuer's key set, by result (ok, failed); a failed fetch keeps the last good set.",
      labelNames: ['result'],
      registers,
    });
    for (const result of ['ok', 'failed']) this.tokenKeyFetches.inc({ result }, 0);
  }

  onTokenKeysFetch(outcome: { readonly ok: boolean }): void {
    this.tokenKeyFetches?.inc({ result: outcome.ok ? 'ok' : 'failed' });
  }

  onRowSkipped(table: string): void {
    this.store.onRowSkipped(table);
  }

  onLastUsedFlush(outcome: { readonly ok: boolean }): void {
    this.store.onLastUsedFlush(outcome);
  }
}
