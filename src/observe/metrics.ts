import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';
import { TOKEN_RULE_DESCRIPTIONS } from '../decision/error-catalogue.js';
import { UNDECIDED_REASONS, type AuthMethod, type ErrorId, type TokenRule } from '../decision/types.js';
import { PACKAGE_ROOT } from '../paths.js';
import type { CheckEvent, UndecidedCheckEvent } from './check-event.js';
import { SiteLabels } from './site-labels.js';
import { TalliedHistogram } from './tallied-histogram.js';

export { OTHER_SITE } from './site-labels.js';

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

/** The `outcome` label of a check SHADOW_MODE let through that would have been denied. */
export const SHADOW_DENIED = 'shadow_denied';


// A check takes microseconds when it is all in memory; Envoy gives up at its timeout (200 ms by
// default, docs/deployment.md, "Envoy"): buckets from 25 µs to 250 ms resolve both ends.
const CHECK_DURATION_BUCKETS = [
  0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
];
// A per-site reload takes milliseconds; a full load of 100,000 sites takes seconds (bench/RESULTS.md).
const SYNC_DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30];
// prom-client's gauges of the same name without "_total" carry the same count by type; promtool
// rejects "_total" on a gauge.
const DEFAULT_METRICS_PROMTOOL_REJECTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}

const FIRST_ERROR_ID = 101;
const ERROR_IDS = 8; // 101 to 108
const DENIED_METHODS: ReadonlyArray<AuthMethod | undefined> = ['api_key', 'token', undefined];
const DENIED_SLOTS = 2 * ERROR_IDS * DENIED_METHODS.length;

/**
 * Where a denial is tallied among a site label's DENIED_SLOTS. A shadow denial was let through: it is
 * counted apart (shadow_denied), so that "denied" keeps meaning refused.
 */
function deniedSlot(shadow: boolean, errorId: ErrorId, method: AuthMethod | undefined): number {
  return ((shadow ? ERROR_IDS : 0) + errorId - FIRST_ERROR_ID) * DENIED_METHODS.length + DENIED_METHODS.indexOf(method);
}

/** The labels of each slot, made once. */
const DENIED_SLOT_LABELS = Array.from({ length: DENIED_SLOTS }, (_, slot) => ({
  outcome: slot >= ERROR_IDS * DENIED_METHODS.length ? SHADOW_DENIED : 'denied',
  errorId: String(FIRST_ERROR_ID + (Math.floor(slot / DENIED_METHODS.length) % ERROR_IDS)),
  method: DENIED_METHODS[slot % DENIED_METHODS.length],
}));

/**
 * Every metric the service exposes on /metrics, declared once, in its own registry (tests make
 * several). Observers feed it events; gauges of state are read at scrape time.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly siteLabels: SiteLabels;
  /**
   * Allowed checks by site label since the last read of the counters, which add them up when read
   * (their collect). An increment through prom-client builds and hashes a label set: on every allowed
   * check, that cost more than the rest of the metrics. Holds at most one entry per site
   * label, so METRICS_SITE_LABELS_MAX + 1.
   */
  private readonly allowedUncounted: Readonly<Record<AuthMethod, Map<string, number>>> = { api_key: new Map(), token: new Map() };
  /**
   * Denied checks the same way, by site label, in one slot per outcome (denied or shadow_denied), error
   * id and method (see deniedSlot): at most METRICS_SITE_LABELS_MAX + 1 entries. Denials must cost no
   * more than allows, or a stranger's wrong keys would be cheap to send and dear to answer; a slot
   * index costs no label text.
   */
  private readonly deniedUncounted = new Map<string, number[]>();
  private readonly checks: Counter<'outcome' | 'error_id' | 'site'>;
  private readonly checkDuration: TalliedHistogram;
  private readonly undecided: Counter<'reason'>;
  private readonly incompleteRequestsReset: Counter;
  private readonly syncs: Counter<'kind'>;
  private readonly sitesRead: Counter<'kind'>;
  private readonly syncFailures: Counter<'kind'>;
  private readonly syncDuration: Histogram<'kind'>;
  private readonly notifications: Counter;
  private readonly rowsSkipped: Counter<'table'>;
  private readonly apiKeyRequests: Counter;
  private readonly tokenRequests: Counter;
  private readonly checksByMethod: Counter<'method' | 'outcome'>;
  private readonly tokenRefusals: Counter<'reason'>;
  private tokenKeyFetches: Counter<'result'> | undefined;
  private readonly sunsetRefusals: Counter;
  private readonly brownoutRehearsals: Counter;
  private readonly lastUsedFlushes: Counter;
  private readonly lastUsedFlushFailures: Counter;

  constructor(options: ServiceMetricsOptions) {
    const registers = [this.registry];
    const now = options.now ?? Date.now;
    const startedAt = now();
    this.siteLabels = new SiteLabels(options.siteLabelsMax);

    collectDefaultMetrics({ register: this.registry });
    for (const name of DEFAULT_METRICS_PROMTOOL_REJECTS) this.registry.removeSingleMetric(name);

    new Gauge({
      name: 'sitekey_authz_build_info',
      aggregator: 'first',
      help: 'Always 1; the labels name the running version of sitekey-authz and of Node.js.',
      labelNames: ['version', 'node_version'],
      registers,
    }).set({ version: options.version ?? packageVersion(), node_version: process.versions.node }, 1);

    this.checks = new Counter({
      name: 'sitekey_authz_checks_total',
      help: 'Checks decided, by outcome (allowed, denied, shadow_denied: let through by SHADOW_MODE, would have been denied), error id of a denial, and site (only sites that have had an allowed check, up to METRICS_SITE_LABELS_MAX; else "other").',
      labelNames: ['outcome', 'error_id', 'site'],
      registers,
      collect: () => this.addUncountedChecks(),
    });
    // Who still authenticates with API keys, and what the sunset refuses.
    this.apiKeyRequests = new Counter({
      name: 'sitekey_authz_apikey_requests_total',
      help: 'Requests authenticated with a valid API key and let through, by site (same label rules as sitekey_authz_checks_total): the traffic the sunset will stop.',
      labelNames: ['site'],
      registers,
      collect: () => this.addUncountedChecks(),
    });
    // Who has moved to tokens: the share of each site's traffic by method, for the migration.
    this.tokenRequests = new Counter({
      name: 'sitekey_authz_token_requests_total',
      help: 'Requests authenticated with a valid access token and let through, by site (same label rules as sitekey_authz_checks_total): the traffic that has migrated.',
      labelNames: ['site'],
      registers,
      collect: () => this.addUncountedChecks(),
    });
    this.checksByMethod = new Counter({
      name: 'sitekey_authz_checks_by_method_total',
      help: 'Checks decided, by the method the request used (api_key: <site id>:<key>; token: Bearer access token) and outcome (allowed, denied); a malformed header (108) has no method and is not counted here.',
      labelNames: ['method', 'outcome'],
      registers,
      collect: () => this.addUncountedChecks(),
    });
    for (const method of ['api_key', 'token']) for (const outcome of ['allowed', 'denied']) this.checksByMethod.inc({ method, outcome }, 0);
    this.tokenRefusals = new Counter({
      name: 'sitekey_authz_token_refusals_total',
      help: 'Requests with a Bearer token refused, by reason: the 106 rule the token broke, or unregistered-client (107).',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of [...Object.keys(TOKEN_RULE_DESCRIPTIONS), 'unregistered-client']) this.tokenRefusals.inc({ reason }, 0);
    this.sunsetRefusals = new Counter({
      name: 'sitekey_authz_apikey_sunset_refusals_total',
      help: 'Requests with valid API-key credentials refused with error 105, by reason: tokens-only (the site moved to tokens), brownout or retired.',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of ['tokens-only', 'brownout', 'retired']) this.sunsetRefusals.inc({ reason }, 0);
    this.brownoutRehearsals = new Counter({
      name: 'sitekey_authz_apikey_brownout_rehearsals_total',
      help: 'Requests a dry-run brownout would have refused with error 105, let through.',
      registers,
    });
    const sunsetAt = options.apiKeySunsetAt;
    new Gauge({
      name: 'sitekey_authz_apikey_sunset_timestamp_seconds',
      aggregator: 'first',
      help: 'When API-key authentication retires (`sitekey-authz sunset show`), in Unix seconds.',
      registers,
      collect() {
        this.set((typeof sunsetAt === 'function' ? sunsetAt() : sunsetAt) / 1000);
      },
    });
    this.checkDuration = new TalliedHistogram(
      'sitekey_authz_check_duration_seconds',
      'Time from receiving a CheckRequest to having its answer ready, by outcome (allowed, denied, unavailable, internal).',
      'outcome',
      CHECK_DURATION_BUCKETS,
    );
    for (const register of registers) register.registerMetric(this.checkDuration as unknown as Metric);
    this.undecided = new Counter({
      name: 'sitekey_authz_checks_undecided_total',
      help: 'Checks that got no decision, so Envoy applied its failure policy: reason unavailable (no fresh credential data, gRPC UNAVAILABLE), unknown-kid-pending (a token names a kid that no fetch of the issuer\'s keys since it arrived has looked up yet, gRPC UNAVAILABLE), verification-budget (a new token beyond the signature checks its address or the process may start, gRPC UNAVAILABLE) or internal (a bug, gRPC INTERNAL).',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of ['unavailable', 'internal', ...UNDECIDED_REASONS]) this.undecided.inc({ reason }, 0);
    this.incompleteRequestsReset = new Counter({
      name: 'sitekey_authz_grpc_incomplete_requests_reset_total',
      help: 'Requests that had begun but not all arrived, answered RESOURCE_EXHAUSTED and reset (oldest first) because all of them together held more bytes than the budget.',
      registers,
    });

    new Gauge({
      name: 'sitekey_authz_ready',
      aggregator: 'min',
      help: '1 while the service answers checks (credential snapshot loaded and fresh, not shutting down), else 0.',
      registers,
      collect() {
        this.set(options.ready() ? 1 : 0);
      },
    });
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

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The text exposition format, for /metrics. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  observeCheck(event: CheckEvent): void {
    const site = this.siteLabels.of(event);
    if (event.outcome === 'allowed') {
      const tally = this.allowedUncounted[event.authMethod];
      tally.set(site, (tally.get(site) ?? 0) + 1);
      if (event.rehearsalBrownoutId !== undefined) this.brownoutRehearsals.inc();
    } else {
      let slots = this.deniedUncounted.get(site);
      if (slots === undefined) this.deniedUncounted.set(site, (slots = new Array<number>(DENIED_SLOTS).fill(0)));
      slots[deniedSlot(event.shadow, event.errorId, event.authMethod)]! += 1;
      if (event.sunsetReason !== undefined && !event.shadow) this.sunsetRefusals.inc({ reason: event.sunsetReason });
      if (event.errorId === 106) this.tokenRefusals.inc({ reason: event.rule as TokenRule });
      else if (event.errorId === 107) this.tokenRefusals.inc({ reason: 'unregistered-client' });
    }
    this.checkDuration.observe(event.outcome === 'denied' && event.shadow ? SHADOW_DENIED : event.outcome, event.durationSeconds);
  }

  private addUncountedChecks(): void {
    for (const method of ['api_key', 'token'] as const) {
      const tally = this.allowedUncounted[method];
      const requests = method === 'api_key' ? this.apiKeyRequests : this.tokenRequests;
      let allowed = 0;
      for (const [site, checks] of tally) {
        this.checks.inc({ outcome: 'allowed', site }, checks);
        requests.inc({ site }, checks);
        allowed += checks;
      }
      if (allowed > 0) this.checksByMethod.inc({ method, outcome: 'allowed' }, allowed);
      tally.clear();
    }
    for (const [site, slots] of this.deniedUncounted) {
      slots.forEach((count, slot) => {
        if (count === 0) return;
        const { outcome, errorId, method } = DENIED_SLOT_LABELS[slot]!;
        this.checks.inc({ outcome, error_id: errorId, site }, count);
        if (method !== undefined) this.checksByMethod.inc({ method, outcome }, count);
      });
    }
    this.deniedUncounted.clear();
  }

  onIncompleteRequestReset(): void {
    this.incompleteRequestsReset.inc();
  }

  observeUndecided(event: UndecidedCheckEvent): void {
    this.undecided.inc({ reason: event.reason });
    this.checkDuration.observe(event.reason === 'internal' ? 'internal' : 'unavailable', event.durationSeconds);
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
    this.rowsSkipped.inc({ table });
  }

  onLastUsedFlush(outcome: { readonly ok: boolean }): void {
    this.lastUsedFlushes.inc();
    if (!outcome.ok) this.lastUsedFlushFailures.inc();
  }
}
