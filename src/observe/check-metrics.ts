import { Counter, Gauge, type Metric, type Registry } from 'prom-client';
import { ERROR_IDS, errorMetricLabel } from '../decision/error-catalogue.js';
import { TOKEN_RULE_DESCRIPTIONS } from '../decision/rule-words.js';
import { UNDECIDED_REASONS, type AuthMethod, type ErrorId, type TokenRule } from '../decision/types.js';
import type { CheckEvent, UndecidedCheckEvent } from './check-event.js';
import { SiteLabels } from './site-labels.js';
import { TalliedHistogram } from './tallied-histogram.js';

/** The `outcome` label of a check SHADOW_MODE let through that would have been denied. */
export const SHADOW_DENIED = 'shadow_denied';

// A check takes microseconds when it is all in memory; Envoy gives up at its timeout (200 ms by
// default, docs/deployment.md, "Envoy"): buckets from 25 µs to 250 ms resolve both ends.
const CHECK_DURATION_BUCKETS = [
  0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
];

const DENIED_METHODS: ReadonlyArray<AuthMethod | undefined> = ['api_key', 'token', undefined];
const DENIED_SLOTS = 2 * ERROR_IDS.length * DENIED_METHODS.length;

/**
 * Where a denial is tallied among a site label's DENIED_SLOTS. A shadow denial was let through: it is
 * counted apart (shadow_denied), so that "denied" keeps meaning refused.
 */
function deniedSlot(shadow: boolean, errorId: ErrorId, method: AuthMethod | undefined): number {
  return ((shadow ? ERROR_IDS.length : 0) + ERROR_IDS.indexOf(errorId)) * DENIED_METHODS.length + DENIED_METHODS.indexOf(method);
}

/** The labels of each slot, made once. */
const DENIED_SLOT_LABELS = Array.from({ length: DENIED_SLOTS }, (_, slot) => ({
  outcome: slot >= ERROR_IDS.length * DENIED_METHODS.length ? SHADOW_DENIED : 'denied',
  errorId: errorMetricLabel(ERROR_IDS[Math.floor(slot / DENIED_METHODS.length) % ERROR_IDS.length]!),
  method: DENIED_METHODS[slot % DENIED_METHODS.length],
}));

/** The metrics of checks: how each was decided, by whom, how long it took, and what the sunset refused. */
export class CheckMetrics {
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
  private readonly apiKeyRequests: Counter;
  private readonly tokenRequests: Counter;
  private readonly checksByMethod: Counter<'method' | 'outcome'>;
  private readonly tokenRefusals: Counter<'reason'>;
  private readonly sunsetRefusals: Counter;
  private readonly brownoutRehearsals: Counter;

  constructor(registry: Registry, options: { readonly siteLabelsMax: number; readonly apiKeySunsetAt: number | (() => number) }) {
    const registers = [registry];
    this.siteLabels = new SiteLabels(options.siteLabelsMax);

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
}
