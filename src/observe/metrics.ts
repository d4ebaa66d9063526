import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectDefaultMetrics, Gauge, Registry, type Counter } from 'prom-client';
import { PACKAGE_ROOT } from '../paths.js';
import { CheckMetrics } from './check-metrics.js';
import { counter, each, scrapedGauge } from './metric-kinds.js';
import { StoreMetrics, type PoolCounts, type SnapshotGauges } from './store-metrics.js';

export type { SnapshotStatus } from './store-metrics.js';

export interface ServiceMetricsOptions {
  /** METRICS_SITE_LABELS_MAX: how many sites get a series of their own. */
  readonly siteLabelsMax: number;
  readonly snapshot: SnapshotGauges;
  readonly pool: PoolCounts;
  readonly ready: () => boolean;
  readonly now?: () => number;
  readonly version?: string;
  /** Epoch ms, a function because it lives in the database: alerts compare traffic with it. */
  readonly apiKeySunsetAt: number | (() => number);
}

// promtool rejects "_total" on a gauge; prom-client's gauges of the name without it carry the same counts.
const DEFAULT_METRICS_PROMTOOL_REJECTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}

/** Every metric the service exposes on /metrics, in its own registry (tests make several). */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly checks: CheckMetrics;
  readonly store: StoreMetrics;
  private tokenKeyFetches: Counter<'result'> | undefined;

  constructor(options: ServiceMetricsOptions) {
    const now = options.now ?? Date.now;
    const startedAt = now();

    collectDefaultMetrics({ register: this.registry });
    for (const name of DEFAULT_METRICS_PROMTOOL_REJECTS) this.registry.removeSingleMetric(name);

    new Gauge({
      name: 'sitekey_authz_build_info',
      aggregator: 'first',
      help: 'Always 1; the labels name the running version of sitekey-authz and of Node.js.',
      labelNames: ['version', 'node_version'],
      registers: [this.registry],
    }).set({ version: options.version ?? packageVersion(), node_version: process.versions.node }, 1);

    // Registered in this order, so that /metrics lists them as it always has.
    this.checks = new CheckMetrics(this.registry, options);
    scrapedGauge(this.registry, 'sitekey_authz_ready', () => (options.ready() ? 1 : 0),
      '1 while the service answers checks (credential snapshot loaded and fresh, not shutting down), else 0.', 'min');
    this.store = new StoreMetrics(this.registry, { snapshot: options.snapshot, pool: options.pool, now, startedAt });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  followTokenKeys(state: { readonly keys: () => number; readonly ageSeconds: () => number; readonly verifiedTokens: () => number }): void {
    const { registry } = this;
    scrapedGauge(registry, 'sitekey_authz_token_issuer_keys', state.keys,
      "Signing keys in the token issuer's key set held now; 0 while none is held (tokens are then refused, keys-unavailable).");
    scrapedGauge(registry, 'sitekey_authz_token_issuer_keys_age_seconds', state.ageSeconds,
      "Seconds since the key set held was fetched from the token issuer (a set read from the database at start: since it was fetched and stored); NaN while none is held.");
    scrapedGauge(registry, 'sitekey_authz_token_verified_cached', state.verifiedTokens,
      'Access tokens whose signature was verified and that are kept (by hash, until their exp) so that repeats cost no signature check.');
    this.tokenKeyFetches = counter(registry, 'sitekey_authz_token_issuer_key_fetches_total', ['result'],
      "Fetches of the token issuer's key set, by result (ok, failed); a failed fetch keeps the last good set.",
      each('result', ['ok', 'failed']));
  }

  onTokenKeysFetch(outcome: { readonly ok: boolean }): void {
    this.tokenKeyFetches?.inc({ result: outcome.ok ? 'ok' : 'failed' });
  }
}
