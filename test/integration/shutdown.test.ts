import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { healthClient, healthOf } from '../support/health-client.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const DELAY_SECONDS = 2;

/**
 * SIGTERM with SHUTDOWN_DELAY_SECONDS: health turns NOT_SERVING at once so that Envoy and Kubernetes
 * stop sending checks here, but checks that still arrive meanwhile are answered, not refused.
 */
describe('a SIGTERM with a shutdown delay', () => {
  let database: TestDatabase;
  let service: RunningService;
  let key: string;

  before(async () => {
    database = await freshDatabase();
    for (const args of [['site', 'add', '1001'], ['ip', 'allow', '1001', '203.0.113.0/24']]) assert.equal((await runCli(database.url, args)).code, 0);
    key = (JSON.parse((await runCli(database.url, ['key', 'issue', '1001', '--json'])).stdout) as { apiKey: string }).apiKey;
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', SHUTDOWN_DELAY_SECONDS: String(DELAY_SECONDS) });
  });

  after(async () => {
    await service?.stop();
    await database?.drop();
  });

  it('reports NOT_SERVING but keeps answering checks until the delay ends, then exits 0', async () => {
    const client = authorizationClient(service.grpcTarget);
    const health = healthClient(service.grpcTarget);
    const request = { authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) };
    try {
      assert.equal(await healthOf(health, ''), 'SERVING');
      const exited = once(service.process, 'exit');
      const signalled = performance.now();
      service.process.kill('SIGTERM');
      await sleep(300);
      assert.equal(await healthOf(health, ''), 'NOT_SERVING');
      assert.equal(await healthOf(health, 'envoy.service.auth.v3.Authorization'), 'NOT_SERVING');
      assert.equal((await fetch(`${service.httpBase}/readyz`)).status, 503);
      assert.equal(verdict(await check(client, request)), 'allow');
      const [code] = (await exited) as [number | null];
      assert.equal(code, 0, service.output());
      assert.ok(performance.now() - signalled >= DELAY_SECONDS * 1000, 'the process left before the delay ended');
    } finally {
      client.close();
      health.close();
    }
  });
});
