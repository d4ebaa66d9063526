import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { samples } from '../support/exposition.js';
import { promtool, WITHOUT_PROMTOOL } from '../support/promtool.js';
import { runCli, startService, type RunningService } from '../support/service.js';

/** `/metrics` of a real `serve` process as checks and credential changes happen. */
describe('sitekey-authz serve exposes Prometheus metrics', () => {
  let database: TestDatabase;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;
  let key: string;

  const scrape = async (): Promise<string> => {
    const response = await fetch(`${service.httpBase}/metrics`);
    assert.equal(response.status, 200);
    return response.text();
  };
  const value = (text: string, name: string, labels = ''): number | undefined => samples(text, name).get(labels);
  /** Scrapes until `holds` is true of the text, for values that follow an asynchronous event. */
  const scrapeUntil = async (holds: (text: string) => boolean, what: string): Promise<string> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const text = await scrape();
      if (holds(text)) return text;
      if (Date.now() > deadline) assert.fail(`${what} did not happen within 10 s:\n${text.split('\n').filter((l) => l.startsWith('sitekey_authz_')).join('\n')}`);
      await sleep(100);
    }
  };

  before(async () => {
    database = await freshDatabase();
    for (const args of [
      ['site', 'add', '1001'],
      ['ip', 'allow', '1001', '203.0.113.0/24'],
    ]) {
      const result = await runCli(database.url, args);
      assert.equal(result.code, 0, result.stderr);
    }
    const issued = await runCli(database.url, ['key', 'issue', '1001', '--json']);
    assert.equal(issued.code, 0, issued.stderr);
    key = (JSON.parse(issued.stdout) as { apiKey: string }).apiKey;
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', LAST_USED_FLUSH_SECONDS: '1' });
    client = authorizationClient(service.grpcTarget);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await database?.drop();
  });

  it('counts checks by outcome, error id and known site as they happen', async () => {
    const before = await scrape();
    assert.equal(value(before, 'sitekey_authz_checks_total', '{outcome="allowed",site="1001"}'), undefined);
    const body = JSON.stringify({ siteid: 1001, apikey: key });
    const cases: Array<[Parameters<typeof check>[1], 'allow' | number]> = [
      [{ authorization: `1001:${key}`, body }, 'allow'],
      [{ authorization: `1001:${key}`, body }, 'allow'],
      [{ authorization: `1001:${key}`, body, ip: '198.51.100.9' }, 103],
      [{ authorization: `98765:${key}`, body }, 101],
      [{ body }, 108],
    ];
    for (const [args, expected] of cases) assert.equal(verdict(await check(client, args)), expected);
    const text = await scrape();
    assert.equal(value(text, 'sitekey_authz_checks_total', '{outcome="allowed",site="1001"}'), 2);
    assert.equal(value(text, 'sitekey_authz_checks_total', '{outcome="denied",error_id="103",site="1001"}'), 1);
    assert.equal(value(text, 'sitekey_authz_checks_total', '{outcome="denied",error_id="101",site="other"}'), 1);
    assert.equal(value(text, 'sitekey_authz_checks_total', '{outcome="denied",error_id="108",site="other"}'), 1);
    assert.ok(!text.includes('98765'), 'an unknown site id became a label');
    assert.equal(value(text, 'sitekey_authz_check_duration_seconds_count', '{outcome="allowed"}'), 2);
    assert.equal(value(text, 'sitekey_authz_check_duration_seconds_count', '{outcome="denied"}'), 3);
  });

  it('shows the snapshot, the LISTEN connection, the pool, readiness and the build', async () => {
    const text = await scrapeUntil((t) => value(t, 'sitekey_authz_snapshot_active_keys') === 1, 'counting the active key');
    assert.equal(value(text, 'sitekey_authz_snapshot_sites'), 1);
    assert.equal(value(text, 'sitekey_authz_listen_connected'), 1);
    assert.equal(value(text, 'sitekey_authz_ready'), 1);
    assert.ok((value(text, 'sitekey_authz_snapshot_age_seconds') ?? -1) >= 0);
    assert.ok((value(text, 'sitekey_authz_snapshot_age_seconds') ?? Infinity) < 60, 'synced at start-up');
    assert.ok((value(text, 'sitekey_authz_snapshot_syncs_total', '{kind="full"}') ?? 0) >= 1);
    assert.ok((value(text, 'sitekey_authz_db_pool_connections') ?? 0) >= 1, 'the pool loaded the snapshot');
    assert.equal(value(text, 'sitekey_authz_db_pool_waiting_queries'), 0);
    assert.match(text, /^sitekey_authz_build_info\{version="\d+\.\d+\.\d+[^"]*",node_version="[^"]+"\} 1$/m);
  });

  it('follows a credential change: a per-site sync and one more active key', async () => {
    const before = value(await scrape(), 'sitekey_authz_snapshot_syncs_total', '{kind="sites"}') ?? 0;
    const issued = await runCli(database.url, ['key', 'issue', '1001']);
    assert.equal(issued.code, 0, issued.stderr);
    const text = await scrapeUntil(
      (t) => value(t, 'sitekey_authz_snapshot_active_keys') === 2 && (value(t, 'sitekey_authz_snapshot_syncs_total', '{kind="sites"}') ?? 0) > before,
      'the per-site sync',
    );
    assert.equal(value(text, 'sitekey_authz_snapshot_sync_failures_total', '{kind="sites"}'), 0);
  });

  it('counts the writes of last-used times', async () => {
    await check(client, { authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) });
    const text = await scrapeUntil((t) => (value(t, 'sitekey_authz_last_used_flushes_total') ?? 0) >= 1, 'a last-used flush');
    assert.equal(value(text, 'sitekey_authz_last_used_flush_failures_total'), 0);
  });

  it('passes promtool check metrics', { skip: WITHOUT_PROMTOOL }, async () => {
    const result = await promtool(['check', 'metrics'], await scrape());
    assert.equal(result.code, 0, result.output);
  });
});
