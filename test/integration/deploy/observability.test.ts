import type { ServerUnaryCall } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { loadConfig } from '../../../src/config.js';
import { decide } from '../../../src/decision/decide.js';
import { createAuthorizationService } from '../../../src/envoy/authorization-service.js';
import type { CheckRequestMessage, CheckResponseMessage } from '../../../src/envoy/messages.js';
import { createLogger } from '../../../src/observe/logger.js';
import { ServiceMetrics } from '../../../src/observe/metrics.js';
import { WorkerPoolMetrics } from '../../../src/observe/worker-pool-metrics.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { checkRequest, type CheckArguments } from '../../support/envoy-client.js';
import { exposedNames } from '../../support/exposition.js';
import { promtool, WITHOUT_PROMTOOL } from '../../support/promtool.js';
import { NO_SUNSET, snapshotOf } from '../../support/snapshot.js';

const DIR = join(PACKAGE_ROOT, 'deploy', 'observability');
const RULES = join(DIR, 'prometheus-rules.yaml');
const RULE_TESTS = join(DIR, 'prometheus-rules.test.yaml');
const DASHBOARD = join(DIR, 'grafana-dashboard.json');

// Our metrics and prom-client's process and Node.js metrics; label names never start like this.
const METRIC_NAME = /\b(?:sitekey_authz|process|nodejs)_[a-z0-9_]+\b/g;

interface DashboardPanel {
  readonly id: number;
  readonly type: string;
  readonly title: string;
  readonly targets?: ReadonlyArray<{ readonly expr?: string }>;
}

/** The metric names a service exposes after it has seen some of everything: checks, syncs, a scrape. */
async function namesTheServiceExposes(): Promise<Set<string>> {
  const key = '6f1c1e0a-8a4b-4c52-9d3e-0b7a2c9d4e5f';
  const snapshot = snapshotOf([{ siteId: '1001', keys: [{ key, keyId: '11' }], cidrs: ['203.0.113.0/24'] }]);
  const metrics = new ServiceMetrics({
    apiKeySunsetAt: NO_SUNSET.sunsetAt,
    siteLabelsMax: 1000,
    snapshot: { status: () => ({ ageSeconds: 3, sites: 1, activeKeys: 1, listening: true }) },
    pool: { totalCount: 1, idleCount: 1, waitingCount: 0 },
    ready: () => true,
  });
  let available = true;
  const service = createAuthorizationService({
    clientIpSource: { kind: 'peer' },
    maxBodyBytes: loadConfig({}).maxBodyBytes,
    authorize: (input) => (available ? decide(input, snapshot, Date.now(), NO_SUNSET) : undefined),
    onDecision: (event) => metrics.checks.observeCheck(event),
    onFailure: (event) => metrics.checks.observeUndecided(event),
    logger: createLogger('silent'),
  });
  const send = (args: CheckArguments) =>
    service.Check({ request: checkRequest(args) } as unknown as ServerUnaryCall<CheckRequestMessage, CheckResponseMessage>, () => undefined);
  send({ authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) });
  send({ authorization: `1001:${key}`, ip: '198.51.100.9' });
  send({});
  available = false;
  send({ authorization: `1001:${key}` });
  metrics.store.onSync({ kind: 'full', ok: true, durationSeconds: 0.1 });
  metrics.store.onSync({ kind: 'sites', ok: false, durationSeconds: 0.1 });
  metrics.store.onNotification();
  metrics.store.onLastUsedFlush({ ok: true });
  // The token path, as a replica with TOKEN_ISSUER has it.
  const tokenKeys = { keys: () => 2, ageSeconds: () => 30, verifiedTokens: () => 0 };
  metrics.followTokenKeys(tokenKeys);
  metrics.onTokenKeysFetch({ ok: false });
  const workerPool = new WorkerPoolMetrics({ running: () => 2 });
  workerPool.onWorkerReplaced();
  return exposedNames(`${await metrics.scrape()}\n${await workerPool.registry.metrics()}`);
}

function metricNamesIn(text: string): Set<string> {
  return new Set(text.match(METRIC_NAME) ?? []);
}

describe('dashboard and alert rules (deploy/observability)', () => {
  let exposed: Set<string>;
  let dashboard: { panels: DashboardPanel[]; templating: { list: Array<{ name: string; query?: unknown }> } };
  let rulesText: string;

  before(async () => {
    exposed = await namesTheServiceExposes();
    dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as typeof dashboard;
    rulesText = await readFile(RULES, 'utf8');
  });

  it('finds a metric name that the service does not expose', () => {
    // The check below would pass vacuously if it found no names at all, or took any name for real.
    assert.ok(exposed.has('sitekey_authz_checks_total'));
    assert.ok(exposed.has('sitekey_authz_check_duration_seconds_bucket'));
    const unknown = [...metricNamesIn('rate(sitekey_authz_check_total[5m])')].filter((name) => !exposed.has(name));
    assert.deepEqual(unknown, ['sitekey_authz_check_total']);
  });

  it('uses only metric names the service exposes, in the dashboard and in the rules', () => {
    const used = new Set([...metricNamesIn(JSON.stringify(dashboard)), ...metricNamesIn(rulesText)]);
    assert.ok(used.size >= 15, `only ${used.size} metric names found: is the pattern still right?`);
    assert.deepEqual([...used].filter((name) => !exposed.has(name)).sort(), []);
  });

  it('has a query in every panel and a unique id for each', () => {
    const ids = dashboard.panels.map((panel) => panel.id);
    assert.equal(new Set(ids).size, ids.length, 'duplicate panel ids');
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
      assert.ok((panel.targets ?? []).length > 0 && panel.targets?.every((target) => (target.expr ?? '').length > 0), `panel "${panel.title}" has no query`);
    }
  });

  it('shows what the platform team asks first', () => {
    const everything = JSON.stringify(dashboard.panels);
    const wanted: Array<[string, RegExp]> = [
      ['traffic', /sum by \(outcome\) \(rate\(sitekey_authz_checks_total/],
      ['denials by error id', /sum by \(error_id\) \(rate\(sitekey_authz_checks_total\{[^}]*outcome=\\"denied\\"/],
      ['top refused sites', /topk\(\d+, sum by \(site, error_id\)/],
      ['latency quantiles', /histogram_quantile\(0\.99, sum by \(le\) \(rate\(sitekey_authz_check_duration_seconds_bucket/],
      ['snapshot age', /sitekey_authz_snapshot_age_seconds/],
      ['readiness', /sitekey_authz_ready/],
      ['sync failures', /sitekey_authz_snapshot_sync_failures_total/],
      ['pool use', /sitekey_authz_db_pool_waiting_queries/],
      ['token checks by outcome', /sum by \(outcome\) \(rate\(sitekey_authz_checks_by_method_total\{[^}]*method=\\"token\\"/],
      ['token refusals by reason', /sum by \(reason\) \(rate\(sitekey_authz_token_refusals_total/],
      ['checks by method, the migration', /sum by \(method, outcome\) \(rate\(sitekey_authz_checks_by_method_total/],
      ['issuer key fetches', /sitekey_authz_token_issuer_key_fetches_total/],
      ['issuer key age', /sitekey_authz_token_issuer_keys_age_seconds/],
    ];
    for (const [what, pattern] of wanted) assert.match(everything, pattern, what);
  });

  it('has an alert, with a summary and a runbook, for each thing that needs a person', () => {
    const alerts = [...rulesText.matchAll(/- alert: (\S+)\n([\s\S]*?)(?=\n {6}- alert:|\s*$)/g)];
    assert.deepEqual(alerts.map((match) => match[1]).sort(), [
      'SitekeyAuthzApiKeyTrafficAfterSunset',
      'SitekeyAuthzChecksUndecided',
      'SitekeyAuthzConnectionsClosedByPrimary',
      'SitekeyAuthzDenialRateSpike',
      'SitekeyAuthzDown',
      'SitekeyAuthzLatencyP99OverBudget',
      'SitekeyAuthzListenDown',
      'SitekeyAuthzNoReadyReplicas',
      'SitekeyAuthzSiteRefusalJump',
      'SitekeyAuthzSnapshotStale',
      'SitekeyAuthzSyncFailures',
      'SitekeyAuthzTokenIssuerKeysStale',
      'SitekeyAuthzTokenKeyFetchFailures',
      'SitekeyAuthzTokenKeysUnavailable',
      'SitekeyAuthzTokenRefusalSpike',
      'SitekeyAuthzWorkerReplaced',
    ]);
    for (const [, name, body = ''] of alerts) {
      assert.match(body, /\n {10}summary: /, `${name} has no summary`);
      assert.match(body, /\n {10}runbook: /, `${name} has no runbook`);
      assert.match(body, /\n {10}severity: (warning|critical)\n/, `${name} has no severity`);
    }
  });

  it('passes promtool check rules', { skip: WITHOUT_PROMTOOL }, async () => {
    const result = await promtool(['check', 'rules', RULES]);
    assert.equal(result.code, 0, result.output);
  });

  it('passes promtool test rules: each alert fires when it should and stays quiet when it should', { skip: WITHOUT_PROMTOOL }, async () => {
    const result = await promtool(['test', 'rules', RULE_TESTS]);
    assert.equal(result.code, 0, result.output);
    const tested = new Set([...(await readFile(RULE_TESTS, 'utf8')).matchAll(/alertname: (\S+)/g)].map((match) => match[1]));
    for (const [, name] of rulesText.matchAll(/- alert: (\S+)/g)) assert.ok(tested.has(name), `${name} has no unit test`);
  });
});
