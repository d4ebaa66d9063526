import { Histogram, type Counter, type Registry } from 'prom-client';
import { errorMetricLabel } from '../decision/error-catalogue.js';
import { TOKEN_RULE_DESCRIPTIONS } from '../decision/rule-words.js';
import { UNDECIDED_REASONS, type TokenRule } from '../decision/types.js';
import type { CheckEvent, UndecidedCheckEvent } from './check-event.js';
import { counter, each, scrapedGauge } from './metric-kinds.js';
import { SiteLabels } from './site-labels.js';

/** The `outcome` label of a check SHADOW_MODE let through that would have been denied. */
const SHADOW_DENIED = 'shadow_denied';

// From 25 µs (a check in memory) to 250 ms (past Envoy's 200 ms default timeout, docs/deployment.md, "Envoy").
const CHECK_DURATION_BUCKETS = [
  0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
];

export class CheckMetrics {
  private readonly siteLabels: SiteLabels;
  private readonly checks: Counter<'outcome' | 'error_id' | 'site'>;
  private readonly checkDuration: Histogram<'outcome'>;
  /** Looked up once per outcome rather than on every check. */
  private readonly checkDurationByOutcome = new Map<string, Histogram.Internal<'outcome'>>();
  private readonly undecided: Counter<'reason'>;
  private readonly incompleteRequestsReset: Counter;
  private readonly apiKeyRequests: Counter<'site'>;
  private readonly tokenRequests: Counter<'site'>;
  private readonly checksByMethod: Counter<'method' | 'outcome'>;
  private readonly tokenRefusals: Counter<'reason'>;
  private readonly sunsetRefusals: Counter<'reason'>;
  private readonly brownoutRehearsals: Counter;

  constructor(registry: Registry, options: { readonly siteLabelsMax: number; readonly apiKeySunsetAt: number | (() => number) }) {
    this.siteLabels = new SiteLabels(options.siteLabelsMax);
    this.checks = counter(registry, 'sitekey_authz_checks_total', ['outcome', 'error_id', 'site'],
      'Checks decided, by outcome (allowed, denied, shadow_denied: let through by SHADOW_MODE, would have been denied), error id of a denial, and site (only sites that have had an allowed check, up to METRICS_SITE_LABELS_MAX; else "other").');
    this.apiKeyRequests = counter(registry, 'sitekey_authz_apikey_requests_total', ['site'],
      'Requests authenticated with a valid API key and let through, by site (same label rules as sitekey_authz_checks_total): the traffic the sunset will stop.');
    this.tokenRequests = counter(registry, 'sitekey_authz_token_requests_total', ['site'],
      'Requests authenticated with a valid access token and let through, by site (same label rules as sitekey_authz_checks_total): the traffic that has migrated.');
    this.checksByMethod = counter(registry, 'sitekey_authz_checks_by_method_total', ['method', 'outcome'],
      'Checks decided, by the method the request used (api_key: <site id>:<key>; token: Bearer access token) and outcome (allowed, denied); a malformed header (108) has no method and is not counted here.',
      ['api_key', 'token'].flatMap((method) => ['allowed', 'denied'].map((outcome) => ({ method, outcome }))));
    this.tokenRefusals = counter(registry, 'sitekey_authz_token_refusals_total', ['reason'],
      'Requests with a Bearer token refused, by reason: the 106 rule the token broke, or unregistered-client (107).',
      each('reason', [...Object.keys(TOKEN_RULE_DESCRIPTIONS), 'unregistered-client']));
    this.sunsetRefusals = counter(registry, 'sitekey_authz_apikey_sunset_refusals_total', ['reason'],
      'Requests with valid API-key credentials refused with error 105, by reason: tokens-only (the site moved to tokens), brownout or retired.',
      each('reason', ['tokens-only', 'brownout', 'retired']));
    this.brownoutRehearsals = counter(registry, 'sitekey_authz_apikey_brownout_rehearsals_total', [],
      'Requests a dry-run brownout would have refused with error 105, let through.');
    const { apiKeySunsetAt: sunsetAt } = options;
    const sunsetSeconds = () => (typeof sunsetAt === 'function' ? sunsetAt() : sunsetAt) / 1000;
    scrapedGauge(registry, 'sitekey_authz_apikey_sunset_timestamp_seconds', sunsetSeconds,
      'When API-key authentication retires (`sitekey-authz sunset show`), in Unix seconds.', 'first');
    this.checkDuration = new Histogram({
      name: 'sitekey_authz_check_duration_seconds',
      help: 'Time from receiving a CheckRequest to having its answer ready, by outcome (allowed, denied, unavailable, internal).',
      labelNames: ['outcome'],
      buckets: CHECK_DURATION_BUCKETS,
      registers: [registry],
    });
    this.undecided = counter(registry, 'sitekey_authz_checks_undecided_total', ['reason'],
      'Checks that got no decision, so Envoy applied its failure policy: reason unavailable (no fresh credential data, gRPC UNAVAILABLE), unknown-kid-pending (a token names a kid that no fetch of the issuer\'s keys since it arrived has looked up yet, gRPC UNAVAILABLE), verification-budget (a new token beyond the signature checks its address or the process may start, gRPC UNAVAILABLE) or internal (a bug, gRPC INTERNAL).',
      each('reason', ['unavailable', 'internal', ...UNDECIDED_REASONS]));
    this.incompleteRequestsReset = counter(registry, 'sitekey_authz_grpc_incomplete_requests_reset_total', [],
      'Requests that had begun but not all arrived, answered RESOURCE_EXHAUSTED and reset (oldest first) because all of them together held more bytes than the budget.');
  }

  observeCheck(event: CheckEvent): void {
    const site = this.siteLabels.of(event);
    if (event.outcome === 'allowed') {
      this.checks.inc({ outcome: 'allowed', site });
      (event.authMethod === 'api_key' ? this.apiKeyRequests : this.tokenRequests).inc({ site });
      this.checksByMethod.inc({ method: event.authMethod, outcome: 'allowed' });
      if (event.rehearsalBrownoutId !== undefined) this.brownoutRehearsals.inc();
    } else {
      // Counted apart, so that "denied" keeps meaning refused.
      const outcome = event.shadow ? SHADOW_DENIED : 'denied';
      this.checks.inc({ outcome, error_id: errorMetricLabel(event.errorId), site });
      if (event.authMethod !== undefined) this.checksByMethod.inc({ method: event.authMethod, outcome });
      if (event.sunsetReason !== undefined && !event.shadow) this.sunsetRefusals.inc({ reason: event.sunsetReason });
      if (event.errorId === 106) this.tokenRefusals.inc({ reason: event.rule as TokenRule });
      else if (event.errorId === 107) this.tokenRefusals.inc({ reason: 'unregistered-client' });
    }
    this.observeDuration(event.outcome === 'denied' && event.shadow ? SHADOW_DENIED : event.outcome, event.durationSeconds);
  }

  onIncompleteRequestReset(): void {
    this.incompleteRequestsReset.inc();
  }

  observeUndecided(event: UndecidedCheckEvent): void {
    this.undecided.inc({ reason: event.reason });
    this.observeDuration(event.reason === 'internal' ? 'internal' : 'unavailable', event.durationSeconds);
  }

  private observeDuration(outcome: string, seconds: number): void {
    let child = this.checkDurationByOutcome.get(outcome);
    if (child === undefined) this.checkDurationByOutcome.set(outcome, (child = this.checkDuration.labels({ outcome })));
    child.observe(seconds);
  }
}
