import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect as connectHttp2, constants as http2Constants } from 'node:http2';
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

const GRACE_SECONDS = 2;

/**
 * SIGTERM with a Check still open: the server stops accepting and lets it finish, but only for
 * SHUTDOWN_GRACE_SECONDS; then it is cut off and the process exits, rather than waiting for it (a
 * request that never completes would otherwise hold the pod until the gRPC request time-out, 10 s).
 */
describe('a SIGTERM with a check still running', () => {
  let database: TestDatabase;
  let service: RunningService;

  before(async () => {
    database = await freshDatabase();
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', SHUTDOWN_GRACE_SECONDS: String(GRACE_SECONDS) });
  });

  after(async () => {
    await service?.stop();
    await database?.drop();
  });

  it('cuts the call off when SHUTDOWN_GRACE_SECONDS ends, without an answer, and exits 0', async () => {
    const session = connectHttp2(`http://${service.grpcTarget}`);
    session.on('error', () => undefined);
    await once(session, 'connect');
    const stream = session.request({
      [http2Constants.HTTP2_HEADER_METHOD]: 'POST',
      [http2Constants.HTTP2_HEADER_PATH]: '/envoy.service.auth.v3.Authorization/Check',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    stream.on('error', () => undefined);
    let grpcStatus: string | undefined;
    stream.on('trailers', (trailers) => (grpcStatus = String(trailers['grpc-status'])));
    stream.on('response', (headers) => (grpcStatus ??= headers['grpc-status'] === undefined ? undefined : String(headers['grpc-status'])));
    // Not events.once: the stream emits 'error' (the session's GOAWAY) before 'close', which would reject it.
    const closed = new Promise<void>((resolveClosed) => stream.on('close', () => resolveClosed()));
    // A gRPC message header announcing 100 bytes, then 10 of them: the call waits for the rest.
    await new Promise<void>((resolveWrite, reject) =>
      stream.write(Buffer.concat([Buffer.from([0, 0, 0, 0, 100]), Buffer.alloc(10)]), (error) => (error ? reject(error) : resolveWrite())),
    );
    // Sent after those frames, a PING is answered after the server has read them: the call is open there now.
    await new Promise<void>((resolvePing, reject) => session.ping((error) => (error ? reject(error) : resolvePing())));

    const exited = once(service.process, 'exit');
    const signalled = performance.now();
    service.process.kill('SIGTERM');
    await closed;
    const cutAfterMs = performance.now() - signalled;
    const [code] = (await exited) as [number | null];
    session.destroy();

    assert.equal(grpcStatus, undefined, `the call was answered (grpc-status ${grpcStatus}) instead of cut off`);
    assert.ok(cutAfterMs >= GRACE_SECONDS * 1000 - 50, `cut off after ${Math.round(cutAfterMs)} ms, before the grace ended`);
    assert.match(service.output(), /gRPC calls still open after the shutdown grace period; closing them/);
    assert.equal(code, 0, service.output());
  });
});
