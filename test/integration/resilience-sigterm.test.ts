import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect as tcpConnect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startCheckLoad, unexpectedOutcomes } from '../support/check-load.js';
import { seedSite } from '../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, checkRequest, decodeCheckResponse, encodeCheckRequest, verdict } from '../support/envoy-client.js';
import { eventually } from '../support/eventually.js';
import { healthClient, healthOf } from '../support/health-client.js';
import { callEnd, grpcFrame, h2session, onlyMessage, openCheckStream, serverHasRead } from '../support/raw-grpc.js';
import { startService, type RunningService } from '../support/service.js';

const KEY = 'c4a1f7e2-5b3d-4e8a-9f06-1d2c3b4a5e6f';
/**
 * As deploy/kubernetes/base/settings.env sets them, but the delay shortened from 5 s to keep the test
 * short: it need only outlast how long the emulated Envoy below takes to move its traffic away.
 */
const DELAY_SECONDS = 3;
const GRACE_SECONDS = 20;
const CONCURRENCY = 16;
/**
 * Envoy still sends checks after its health check has seen NOT_SERVING, until it has moved away:
 * here 100 more, or as many as the callers manage in 1 s, which leaves 2 s of the delay to spare on a
 * loaded machine before serve stops accepting.
 */
const CHECKS_AFTER_NOT_SERVING = 100;
const MOVING_AWAY_MS = 1_000;
const HALF_SENT_CALLS = 20;

/** Whether a new TCP connection to `target` is refused: serve has stopped accepting, and drains. */
function refusesConnections(target: string): Promise<boolean> {
  const [host = '', port = ''] = target.split(':');
  return new Promise((resolveRefused) => {
    const socket = tcpConnect(Number(port), host);
    socket.once('connect', () => {
      socket.destroy();
      resolveRefused(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolveRefused(error.code === 'ECONNREFUSED'));
  });
}

/**
 * SIGTERM during load loses no in-flight check, with the pod configured as Kubernetes runs
 * it: SHUTDOWN_DELAY_SECONDS keeps checks answered while Envoy's health checks notice NOT_SERVING, and
 * SHUTDOWN_GRACE_SECONDS lets the checks still in flight when the server stops accepting finish.
 */
describe('a SIGTERM under load', () => {
  let database: TestDatabase;
  let service: RunningService;

  before(async () => {
    database = await freshDatabase();
    await seedSite(database.url, { id: '1001', keys: [{ key: KEY }], cidrs: ['203.0.113.0/24'] });
    service = await startService({
      DATABASE_URL: database.url,
      MIGRATE_ON_START: 'false',
      SHUTDOWN_DELAY_SECONDS: String(DELAY_SECONDS),
      SHUTDOWN_GRACE_SECONDS: String(GRACE_SECONDS),
    });
  });

  after(async () => {
    await service?.stop();
    await database?.drop();
  });

  it('answers every check in flight or sent during the delay, finishes calls in flight at the drain, and exits 0', async (t) => {
    const wellFormed = { authorization: `1001:${KEY}`, body: JSON.stringify({ siteid: 1001, apikey: KEY }) };
    const envoy = authorizationClient(service.grpcTarget);
    const health = healthClient(service.grpcTarget);
    const session = h2session(service.grpcTarget);
    const message = grpcFrame(encodeCheckRequest(checkRequest(wellFormed)));
    const half = Math.floor(message.length / 2);
    const load = startCheckLoad(envoy, wellFormed, CONCURRENCY);
    try {
      await load.answered(200, 10_000);
      // Calls whose headers and first half of their message have arrived, the rest still to come: in
      // flight at SIGTERM, and still when the drain begins (well within GRPC_LIMITS.requestTimeoutMs).
      const halfSent = Array.from({ length: HALF_SENT_CALLS }, () => {
        const stream = openCheckStream(session);
        const ended = callEnd(stream);
        stream.write(message.subarray(0, half));
        return { stream, ended };
      });
      await serverHasRead(session);
      const exited = once(service.process, 'exit');
      const signalledAt = performance.now();
      service.process.kill('SIGTERM');
      // Envoy's health check sees NOT_SERVING, and Envoy takes a moment longer to move its checks away.
      await eventually('health NOT_SERVING', () => healthOf(health, 'envoy.service.auth.v3.Authorization'), (status) => status === 'NOT_SERVING', 5_000);
      await load.answeredWithin(load.calls.length + CHECKS_AFTER_NOT_SERVING, MOVING_AWAY_MS);
      const calls = await load.stop();
      const inFlightAtSignal = calls.filter((call) => call.startedMs < signalledAt && call.endedMs > signalledAt).length;
      const sentDuringDelay = calls.filter((call) => call.startedMs > signalledAt).length;
      assert.deepEqual(unexpectedOutcomes(calls, 'allow'), new Map(), `of ${calls.length} checks, some were not allowed`);
      assert.ok(inFlightAtSignal > 0, 'no check was in flight when SIGTERM was sent');
      assert.ok(sentDuringDelay >= CONCURRENCY, `only ${sentDuringDelay} checks were sent after SIGTERM`);

      // The delay is over: serve stops accepting and drains. The half-sent calls are still open.
      await eventually('the gRPC port refusing connections', () => refusesConnections(service.grpcTarget), (refused) => refused, (DELAY_SECONDS + 10) * 1000);
      const drainingAt = performance.now();
      assert.equal(service.process.exitCode, null, 'serve exited with calls in flight');
      for (const { stream } of halfSent) stream.end(message.subarray(half));
      for (const { grpcStatus, data } of await Promise.all(halfSent.map((call) => call.ended))) {
        assert.equal(grpcStatus, 0, 'a call in flight at the drain failed');
        assert.equal(verdict(decodeCheckResponse(onlyMessage(data))), 'allow');
      }
      const [code] = (await exited) as [number | null];
      assert.equal(code, 0, service.output());
      assert.ok(drainingAt - signalledAt >= DELAY_SECONDS * 1000, 'serve stopped accepting before the shutdown delay was over');
      assert.doesNotMatch(service.output(), /still open after the shutdown grace period/);
      t.diagnostic(`${calls.length} checks, ${inFlightAtSignal} in flight at SIGTERM, ${sentDuringDelay} sent after it; ${HALF_SENT_CALLS} finished during the drain`);
    } finally {
      await load.stop();
      session.destroy();
      envoy.close();
      health.close();
    }
  });
});
