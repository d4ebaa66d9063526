import assert from 'node:assert/strict';
import { randomInt, randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../../src/config.js';
import { decide } from '../../../src/decision/decide.js';
import type { CredentialSnapshot } from '../../../src/decision/types.js';
import type { CheckRequestMessage } from '../../../src/envoy/messages.js';
import { viewCheckRequest } from '../../../src/envoy/request-view.js';
import { checkEvent } from '../../../src/observe/check-event.js';
import { startHttpEndpoints, type HttpEndpoints } from '../../../src/observe/http-endpoints.js';
import { ServiceMetrics, type ServiceMetricsOptions, type SnapshotStatus } from '../../../src/observe/metrics.js';
import { checkRequest, type CheckArguments } from '../../support/envoy-client.js';
import { samples } from '../../support/exposition.js';
import { promtool, WITHOUT_PROMTOOL } from '../../support/promtool.js';
import { NO_SUNSET, snapshotOf } from '../../support/snapshot.js';

const KEY = '6f1c1e0a-8a4b-4c52-9d3e-0b7a2c9d4e5f';
const NOW = Date.parse('2026-06-01T00:00:00Z');
const SITES = ['1001', '1002', '1003'];
const WRONG_KEY = '0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a';
const SNAPSHOT = snapshotOf(SITES.map((siteId, i) => ({ siteId, keys: [{ key: KEY, keyId: String(11 + i) }], cidrs: ['203.0.113.0/24'] })));

interface Fixture {
  readonly metrics: ServiceMetrics;
  readonly state: { snapshot: SnapshotStatus; pool: { totalCount: number; idleCount: number; waitingCount: number }; ready: boolean };
  check(args: CheckArguments, snapshot?: CredentialSnapshot): void;
  scrape(): Promise<string>;
  /** Series of our own metrics (not the process's, which come and go with the garbage collector). */
  series(): Promise<Set<string>>;
}

function fixture(options: Partial<ServiceMetricsOptions> = {}): Fixture {
  const state: Fixture['state'] = {
    snapshot: { ageSeconds: 12, sites: 3, activeKeys: 3, listening: true },
    pool: { totalCount: 2, idleCount: 1, waitingCount: 0 },
    ready: true,
  };
  const metrics = new ServiceMetrics({
    apiKeySunsetAt: NO_SUNSET.sunsetAt,
    siteLabelsMax: 1000,
    snapshot: { status: () => state.snapshot },
    pool: state.pool,
    ready: () => state.ready,
    version: '9.9.9-test',
    ...options,
  });
  const scrape = () => metrics.scrape();
  return {
    metrics,
    state,
    scrape,
    check(args, snapshot = SNAPSHOT) {
      const view = viewCheckRequest(checkRequest({ authorization: `1001:${KEY}`, body: JSON.stringify({ siteid: 1001, apikey: KEY }), ...args }) as CheckRequestMessage, {
        clientIpSource: { kind: 'peer' },
        maxBodyBytes: loadConfig({}).maxBodyBytes,
      });
      metrics.checks.observeCheck(checkEvent(view, decide(view.input, snapshot, NOW, NO_SUNSET), 0.00004));
    },
    async series() {
      const text = await scrape();
      return new Set(text.split('\n').filter((line) => line.startsWith('sitekey_authz_')).map((line) => line.slice(0, line.lastIndexOf(' '))));
    },
  };
}

const randomIp = () => (randomInt(2) ? `${randomInt(256)}.${randomInt(256)}.${randomInt(256)}.${randomInt(256)}` : `2001:db8:${randomInt(65536).toString(16)}::${randomInt(65536).toString(16)}`);
const randomSiteId = () => String(randomInt(4000, 2 ** 47));

describe('service metrics', () => {
  it('counts API-key requests by site, 105 refusals by reason and dry-run rehearsals, and exports the sunset', async () => {
    const f = fixture();
    const during = (dryRun: boolean) => snapshotOf(
      [{ siteId: '1001', keys: [{ key: KEY, keyId: '11' }], cidrs: ['203.0.113.0/24'] }],
      [{ id: '9', from: NOW - 1_000, until: NOW + 1_000, siteIds: null, dryRun }],
    );
    f.check({});
    f.check({}, during(true));
    f.check({}, during(false));
    const text = await f.scrape();
    assert.match(text, /^sitekey_authz_apikey_requests_total\{site="1001"\} 2$/m, 'the allowed check and the rehearsal');
    assert.match(text, /^sitekey_authz_apikey_brownout_rehearsals_total 1$/m);
    assert.match(text, /^sitekey_authz_apikey_sunset_refusals_total\{reason="brownout"\} 1$/m);
    assert.match(text, /^sitekey_authz_apikey_sunset_refusals_total\{reason="retired"\} 0$/m);
    assert.match(text, new RegExp(`^sitekey_authz_apikey_sunset_timestamp_seconds ${NO_SUNSET.sunsetAt / 1000}$`, 'm'));
  });

  it('counts checks by outcome, error id and known site, and times them', async () => {
    const f = fixture();
    f.check({});
    f.check({});
    f.check({ ip: '198.51.100.9' });
    f.check({ authorization: `4242:${KEY}` });
    f.check({ authorization: 'garbage' });
    const text = await f.scrape();
    assert.deepEqual(
      Object.fromEntries(samples(text, 'sitekey_authz_checks_total')),
      {
        '{outcome="allowed",site="1001"}': 2,
        '{outcome="denied",error_id="103",site="1001"}': 1,
        '{outcome="denied",error_id="101",site="other"}': 1,
        '{outcome="denied",error_id="108",site="other"}': 1,
      },
    );
    const durations = samples(text, 'sitekey_authz_check_duration_seconds_bucket');
    assert.equal(durations.get('{le="0.000025",outcome="allowed"}'), 0);
    assert.equal(durations.get('{le="0.00005",outcome="allowed"}'), 2);
    assert.equal(durations.get('{le="0.25",outcome="denied"}'), 3);
    assert.equal(samples(text, 'sitekey_authz_check_duration_seconds_count').get('{outcome="allowed"}'), 2);
  });

  it('counts each allowed check once, however many scrapes come between', async () => {
    const f = fixture({ siteLabelsMax: 1 });
    const allowed = async () => {
      const text = await f.scrape();
      return [samples(text, 'sitekey_authz_checks_total'), samples(text, 'sitekey_authz_apikey_requests_total')].map((series) => Object.fromEntries(series));
    };
    f.check({});
    f.check({});
    assert.deepEqual(await allowed(), [{ '{outcome="allowed",site="1001"}': 2 }, { '{site="1001"}': 2 }]);
    assert.deepEqual(await allowed(), [{ '{outcome="allowed",site="1001"}': 2 }, { '{site="1001"}': 2 }]);
    f.check({});
    f.check({ authorization: `1002:${KEY}`, body: JSON.stringify({ siteid: 1002, apikey: KEY }) });
    assert.deepEqual(await allowed(), [
      { '{outcome="allowed",site="1001"}': 3, '{outcome="allowed",site="other"}': 1 },
      { '{site="1001"}': 3, '{site="other"}': 1 },
    ]);
    const site1001 = async () =>
      (await f.metrics.registry.getSingleMetric('sitekey_authz_apikey_requests_total')?.get())?.values.find((value) => value.labels['site'] === '1001')?.value;
    const before = await site1001();
    f.check({});
    assert.deepEqual([before, await site1001()], [3, 4], 'a single metric read on its own adds up what came before it');
  });

  it('buckets check durations from 25 µs to 250 ms', async () => {
    const text = await fixture().scrape();
    assert.match(text, /# TYPE sitekey_authz_check_duration_seconds histogram/);
    const f = fixture();
    f.metrics.checks.observeUndecided({ requestId: undefined, reason: 'unavailable', durationSeconds: 0.3 });
    const buckets = [...samples(await f.scrape(), 'sitekey_authz_check_duration_seconds_bucket').keys()].map((labels) => /le="([^"]+)"/.exec(labels)?.[1]);
    assert.equal(buckets[0], '0.000025');
    assert.equal(buckets.at(-2), '0.25');
    assert.equal(buckets.at(-1), '+Inf');
  });

  it('adds no series for 1,000 checks with random unknown site ids and random IPs', async () => {
    const f = fixture();
    // One of each kind first: the series they fall into may be new once.
    f.check({ authorization: `${randomSiteId()}:${KEY}`, ip: randomIp() });
    f.check({ ip: randomIp() });
    f.check({ authorization: `${randomSiteId()}x:${KEY}`, ip: randomIp() });
    const before = await f.series();
    for (let i = 0; i < 1_000; i++) {
      const garbage = randomUUID();
      f.check({ authorization: `${randomSiteId()}:${KEY}`, ip: randomIp(), headers: { 'x-request-id': garbage } });
      f.check({ authorization: `${randomSiteId()}:${randomUUID()}`, ip: randomIp() });
      f.check({ ip: randomIp() });
      f.check({ authorization: `${garbage}:${KEY}`, ip: randomIp() });
    }
    const after = await f.series();
    assert.deepEqual([...after].filter((series) => !before.has(series)), []);
    const text = await f.scrape();
    assert.equal(samples(text, 'sitekey_authz_checks_total').get('{outcome="denied",error_id="101",site="other"}'), 2_001);
    assert.ok(!/\d+\.\d+\.\d+\.\d+"/.test(text.split('\n').filter((l) => l.startsWith('sitekey_authz_')).join('\n')), 'an IP became a label');
  });

  it('counts each denied check once, however many scrapes come between, under its error id and label', async () => {
    const f = fixture();
    const denied = async () => Object.fromEntries([...samples(await f.scrape(), 'sitekey_authz_checks_total')].filter(([labels]) => labels.includes('denied')));
    f.check({});
    f.check({ authorization: `1001:${WRONG_KEY}`, body: JSON.stringify({ siteid: 1001, apikey: WRONG_KEY }) });
    f.check({ authorization: 'garbage' });
    const once = { '{outcome="denied",error_id="102",site="1001"}': 1, '{outcome="denied",error_id="108",site="other"}': 1 };
    assert.deepEqual(await denied(), once);
    assert.deepEqual(await denied(), once);
    f.check({ authorization: `1001:${WRONG_KEY}`, body: JSON.stringify({ siteid: 1001, apikey: WRONG_KEY }) });
    assert.deepEqual(await denied(), { ...once, '{outcome="denied",error_id="102",site="1001"}': 2 });
  });

  it('counts denied checks by method once each, a 108 under none (it named no method)', async () => {
    const f = fixture();
    const byMethod = async () => samples(await f.scrape(), 'sitekey_authz_checks_by_method_total');
    f.check({ authorization: `1001:${WRONG_KEY}`, body: JSON.stringify({ siteid: 1001, apikey: WRONG_KEY }) });
    f.check({ authorization: `1002:${WRONG_KEY}`, body: JSON.stringify({ siteid: 1002, apikey: WRONG_KEY }) });
    f.check({ authorization: 'garbage' });
    assert.equal((await byMethod()).get('{method="api_key",outcome="denied"}'), 2);
    assert.equal((await byMethod()).get('{method="api_key",outcome="denied"}'), 2, 'a second scrape adds nothing');
    assert.equal((await byMethod()).get('{method="token",outcome="denied"}'), 0);
  });

  it('gives a site its own label only after an allowed check: a stranger naming existing sites with a wrong key takes none', async () => {
    const f = fixture({ siteLabelsMax: 2 });
    for (const site of SITES) {
      f.check({ authorization: `${site}:${WRONG_KEY}`, body: JSON.stringify({ siteid: Number(site), apikey: WRONG_KEY }) });
      f.check({ authorization: `${site}:${KEY}`, body: JSON.stringify({ siteid: Number(site), apikey: KEY }), ip: '198.51.100.9' });
    }
    assert.deepEqual(Object.fromEntries(samples(await f.scrape(), 'sitekey_authz_checks_total')), {
      '{outcome="denied",error_id="102",site="other"}': 3,
      '{outcome="denied",error_id="103",site="other"}': 3,
    });
    f.check({ authorization: `1003:${KEY}`, body: JSON.stringify({ siteid: 1003, apikey: KEY }) });
    f.check({ authorization: `1003:${WRONG_KEY}`, body: JSON.stringify({ siteid: 1003, apikey: WRONG_KEY }) });
    assert.deepEqual(Object.fromEntries(samples(await f.scrape(), 'sitekey_authz_checks_total')), {
      '{outcome="allowed",site="1003"}': 1,
      '{outcome="denied",error_id="102",site="1003"}': 1,
      '{outcome="denied",error_id="102",site="other"}': 3,
      '{outcome="denied",error_id="103",site="other"}': 3,
    });
  });

  it('labels at most METRICS_SITE_LABELS_MAX sites; later ones count as "other"', async () => {
    const f = fixture({ siteLabelsMax: 2 });
    for (const site of SITES) f.check({ authorization: `${site}:${KEY}`, body: JSON.stringify({ siteid: Number(site), apikey: KEY }) });
    f.check({ authorization: `1001:${KEY}`, ip: '198.51.100.9' });
    assert.deepEqual(Object.fromEntries(samples(await f.scrape(), 'sitekey_authz_checks_total')), {
      '{outcome="allowed",site="1001"}': 1,
      '{outcome="allowed",site="1002"}': 1,
      '{outcome="allowed",site="other"}': 1,
      '{outcome="denied",error_id="103",site="1001"}': 1,
    });
    const none = fixture({ siteLabelsMax: 0 });
    none.check({});
    assert.deepEqual([...samples(await none.scrape(), 'sitekey_authz_checks_total').keys()], ['{outcome="allowed",site="other"}']);
  });

  it('reads the snapshot, the pool and readiness at each scrape', async () => {
    const f = fixture();
    let text = await f.scrape();
    const value = (name: string) => samples(text, name).get('');
    assert.deepEqual(
      ['sitekey_authz_snapshot_age_seconds', 'sitekey_authz_snapshot_sites', 'sitekey_authz_snapshot_active_keys', 'sitekey_authz_listen_connected', 'sitekey_authz_ready'].map(value),
      [12, 3, 3, 1, 1],
    );
    assert.deepEqual(['sitekey_authz_db_pool_connections', 'sitekey_authz_db_pool_idle_connections', 'sitekey_authz_db_pool_waiting_queries'].map(value), [2, 1, 0]);
    f.state.snapshot = { ageSeconds: 901.5, sites: 0, activeKeys: 0, listening: false };
    Object.assign(f.state.pool, { totalCount: 4, idleCount: 0, waitingCount: 7 });
    f.state.ready = false;
    text = await f.scrape();
    assert.deepEqual(
      ['sitekey_authz_snapshot_age_seconds', 'sitekey_authz_snapshot_sites', 'sitekey_authz_listen_connected', 'sitekey_authz_ready', 'sitekey_authz_db_pool_waiting_queries'].map(value),
      [901.5, 0, 0, 0, 7],
    );
  });

  it('reports the age since start-up while no snapshot was ever loaded', async () => {
    let now = 1_000_000;
    const f = fixture({ now: () => now });
    f.state.snapshot = { ageSeconds: null, sites: 0, activeKeys: 0, listening: false };
    now += 42_000;
    assert.equal(samples(await f.scrape(), 'sitekey_authz_snapshot_age_seconds').get(''), 42);
  });

  it('counts syncs, sync failures, notifications, last-used flushes and undecided checks', async () => {
    const f = fixture();
    let text = await f.scrape();
    assert.equal(samples(text, 'sitekey_authz_snapshot_sync_failures_total').get('{kind="full"}'), 0, 'zero before the first failure');
    assert.equal(samples(text, 'sitekey_authz_checks_undecided_total').get('{reason="unavailable"}'), 0);
    f.metrics.store.onSync({ kind: 'full', ok: true, durationSeconds: 0.2 });
    f.metrics.store.onSync({ kind: 'full', ok: false, durationSeconds: 10 });
    f.metrics.store.onSync({ kind: 'sites', ok: true, durationSeconds: 0.002 });
    f.metrics.store.onNotification();
    f.metrics.store.onNotification();
    f.metrics.store.onLastUsedFlush({ ok: true });
    f.metrics.store.onLastUsedFlush({ ok: false });
    f.metrics.checks.observeUndecided({ requestId: 'r', reason: 'unavailable', durationSeconds: 0.00001 });
    f.metrics.checks.observeUndecided({ requestId: 'r', reason: 'internal', durationSeconds: 0.00001 });
    f.metrics.checks.observeUndecided({ requestId: 'r', reason: 'unknown-kid-pending', durationSeconds: 0.00001 });
    f.metrics.checks.observeUndecided({ requestId: 'r', reason: 'unknown-kid-pending', durationSeconds: 0.00001 });
    text = await f.scrape();
    assert.deepEqual(Object.fromEntries(samples(text, 'sitekey_authz_snapshot_syncs_total')), { '{kind="full"}': 2, '{kind="sites"}': 1 });
    assert.deepEqual(Object.fromEntries(samples(text, 'sitekey_authz_snapshot_sync_failures_total')), { '{kind="full"}': 1, '{kind="sites"}': 0 });
    assert.equal(samples(text, 'sitekey_authz_snapshot_sync_duration_seconds_count').get('{kind="full"}'), 1, 'only successful syncs are timed');
    assert.equal(samples(text, 'sitekey_authz_notifications_total').get(''), 2);
    assert.equal(samples(text, 'sitekey_authz_last_used_flushes_total').get(''), 2);
    assert.equal(samples(text, 'sitekey_authz_last_used_flush_failures_total').get(''), 1);
    assert.deepEqual(Object.fromEntries(samples(text, 'sitekey_authz_checks_undecided_total')), { '{reason="unavailable"}': 1, '{reason="internal"}': 1, '{reason="unknown-kid-pending"}': 2, '{reason="verification-budget"}': 0 });
  });

  it('names the build, and includes the process and Node.js metrics', async () => {
    const text = await fixture().scrape();
    assert.equal(samples(text, 'sitekey_authz_build_info').get(`{version="9.9.9-test",node_version="${process.versions.node}"}`), 1);
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name);
    }
  });

  it('keeps registries apart, so that several can live in one process', async () => {
    const a = fixture();
    const b = fixture();
    a.check({});
    assert.equal(samples(await a.scrape(), 'sitekey_authz_checks_total').size, 1);
    assert.equal(samples(await b.scrape(), 'sitekey_authz_checks_total').size, 0);
  });

  describe('served on /metrics', () => {
    let endpoints: HttpEndpoints | undefined;
    const f = fixture();
    after(() => endpoints?.close());

    it('answers in the Prometheus text format', async () => {
      endpoints = await startHttpEndpoints({ bindAddress: '127.0.0.1', port: 0, readiness: () => ({ ready: true, detail: {} }), metrics: f.metrics });
      f.check({});
      const response = await fetch(`http://127.0.0.1:${endpoints.port}/metrics`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      assert.equal(samples(await response.text(), 'sitekey_authz_checks_total').get('{outcome="allowed",site="1001"}'), 1);
    });

    it('passes promtool check metrics on a real scrape', { skip: WITHOUT_PROMTOOL }, async () => {
      endpoints ??= await startHttpEndpoints({ bindAddress: '127.0.0.1', port: 0, readiness: () => ({ ready: true, detail: {} }), metrics: f.metrics });
      for (const args of [{}, { ip: '198.51.100.9' }, { authorization: 'x' }, { authorization: `4242:${KEY}` }]) f.check(args);
      f.metrics.store.onSync({ kind: 'full', ok: true, durationSeconds: 0.1 });
      f.metrics.checks.observeUndecided({ requestId: undefined, reason: 'unavailable', durationSeconds: 0.001 });
      const text = await (await fetch(`http://127.0.0.1:${endpoints.port}/metrics`)).text();
      const result = await promtool(['check', 'metrics'], text);
      assert.equal(result.code, 0, result.output);
    });
  });
});
