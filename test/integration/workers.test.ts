import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { isAlive } from '../../src/embedded/embedded-postgres.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { timedCheck } from '../support/check-load.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { eventually } from '../support/eventually.js';
import { samples } from '../support/exposition.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const WORKERS = 2;
// Enough connections that the primary, handing them in turn, gives each worker several.
const CONNECTIONS = 6;

interface WorkerReadiness {
  readonly worker: number;
  readonly pid: number;
  readonly ready: boolean;
  /** Connections the primary handed it that it has not taken yet. */
  readonly connectionsNotTaken: number;
}

/** WORKERS=2: several processes answer checks on one port, with one /readyz and one /metrics. */
describe('serve with WORKERS=2', () => {
  let database: TestDatabase;
  let service: RunningService;

  const request = (key: string) => ({ authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) });
  const readyz = async () => (await (await fetch(`${service.httpBase}/readyz`)).json()) as { status: string; workers: WorkerReadiness[] };
  const metric = async (name: string, labels = '') => samples(await (await fetch(`${service.httpBase}/metrics`)).text(), name).get(labels) ?? 0;
  /** One check on each of `CONNECTIONS` new connections: the cluster spreads connections, not calls. */
  const checkOnNewConnections = async (key: string, target = service.grpcTarget) => {
    const verdicts = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      const client = authorizationClient(target, { 'grpc.use_local_subchannel_pool': 1 });
      try {
        verdicts.push(verdict(await check(client, request(key))));
      } finally {
        client.close();
      }
    }
    return verdicts;
  };

  /** A key of its own for each test, once every worker accepts it: no test depends on another's. */
  async function acceptedKey(target = service.grpcTarget): Promise<{ apiKey: string; keyId: string }> {
    const issued = JSON.parse((await runCli(database.url, ['key', 'issue', '1001', '--json'])).stdout) as { apiKey: string; keyId: string };
    await eventually('every connection to accept the new key', () => checkOnNewConnections(issued.apiKey, target), (answers) => answers.every((answer) => answer === 'allow'), 15_000);
    return issued;
  }
  const startWorkers = () => startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', WORKERS: String(WORKERS), LOG_ALLOWED_SAMPLE_RATE: '1' });

  before(async () => {
    database = await freshDatabase();
    for (const args of [['site', 'add', '1001'], ['ip', 'allow', '1001', '203.0.113.0/24']]) assert.equal((await runCli(database.url, args)).code, 0);
    service = await startWorkers();
  });

  after(async () => {
    await service?.stop();
    await database?.drop();
  });

  it('is ready only once every worker is, and names each in /readyz', async () => {
    const { status, workers } = await readyz();
    assert.equal(status, 'ready');
    assert.equal(workers.length, WORKERS);
    assert.ok(workers.every((worker) => worker.ready && worker.pid !== service.process.pid));
    assert.equal(new Set(workers.map((worker) => worker.pid)).size, WORKERS);
  });

  it('answers checks from every worker, and /metrics adds up what all of them counted', async () => {
    const { apiKey } = await acceptedKey();
    const allowedBefore = samples(await (await fetch(`${service.httpBase}/metrics`)).text(), 'sitekey_authz_checks_total');
    assert.deepEqual(await checkOnNewConnections(apiKey), Array(CONNECTIONS).fill('allow'));
    const answeredBy = new Set(
      service
        .output()
        .split('\n')
        .filter((line) => line.includes('"check.allowed"'))
        .map((line) => (JSON.parse(line) as { worker?: number }).worker),
    );
    assert.equal(answeredBy.size, WORKERS, `allowed checks were logged by workers ${[...answeredBy].join(', ')}`);
    const exposition = await (await fetch(`${service.httpBase}/metrics`)).text();
    const allowed = (series: Map<string, number>) => [...series].filter(([labels]) => labels.includes('outcome="allowed"')).reduce((sum, [, value]) => sum + value, 0);
    assert.equal(allowed(samples(exposition, 'sitekey_authz_checks_total')) - allowed(allowedBefore), CONNECTIONS);
    assert.equal(samples(exposition, 'sitekey_authz_workers').get(''), WORKERS);
    assert.equal(samples(exposition, 'sitekey_authz_ready').get(''), 1);
  });

  it('brings a revoked key to every worker', async () => {
    const { apiKey, keyId } = await acceptedKey();
    assert.equal((await runCli(database.url, ['key', 'revoke', '1001', keyId])).code, 0);
    await eventually('every connection to see the revocation', () => checkOnNewConnections(apiKey), (answers) => answers.every((answer) => answer === 102), 15_000);
  });

  it('replaces a worker that dies, and counts it', async () => {
    const replacedBefore = await metric('sitekey_authz_workers_replaced_total');
    const [victim] = (await readyz()).workers;
    assert.ok(victim);
    process.kill(victim.pid, 'SIGKILL');
    await eventually(
      'a replacement worker to be ready',
      readyz,
      ({ status, workers }) => status === 'ready' && workers.length === WORKERS && !workers.some((worker) => worker.pid === victim.pid),
      15_000,
    );
    assert.equal(await metric('sitekey_authz_workers_replaced_total'), replacedBefore + 1);
    await acceptedKey();
  });

  it('hands a connection its worker died before taking to a worker that lives, instead of leaving it open unanswered', async () => {
    const { apiKey } = await acceptedKey();
    const [victim] = (await readyz()).workers;
    assert.ok(victim);
    const handedAgain = () => metric('sitekey_authz_worker_handoffs_total', '{outcome="handed_again"}');
    const handedAgainBefore = await handedAgain();
    // A stopped worker takes no connection: those handed to it wait, as when a worker dies on receipt.
    process.kill(victim.pid, 'SIGSTOP');
    let answered = 0;
    const calls = Array.from({ length: 8 }, async () => {
      const client = authorizationClient(service.grpcTarget, { 'grpc.use_local_subchannel_pool': 1 });
      try {
        return (await timedCheck(client, request(apiKey), 20_000)).outcome;
      } finally {
        answered += 1;
        client.close();
      }
    });
    const notTaken = async () => (await readyz()).workers.find((worker) => worker.pid === victim.pid)?.connectionsNotTaken ?? 0;
    const waiting = await eventually('every connection answered or waiting for the stopped worker', async () => ({ answered, notTaken: await notTaken() }), (now) => now.notTaken > 0 && now.answered + now.notTaken === 8, 15_000);
    process.kill(victim.pid, 'SIGKILL');
    assert.deepEqual(await Promise.all(calls), Array(8).fill('allow'));
    await eventually('a replacement worker to be ready', readyz, ({ status, workers }) => status === 'ready' && !workers.some((worker) => worker.pid === victim.pid), 15_000);
    assert.equal(await handedAgain(), handedAgainBefore + waiting.notTaken);
  });

  it('hands a replacement worker no connection before its snapshot is loaded', async () => {
    const { apiKey } = await acceptedKey();
    // The replacement's first load waits behind this lock; the other worker keeps its snapshot.
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE sites IN ACCESS EXCLUSIVE MODE');
      const [victim] = (await readyz()).workers;
      assert.ok(victim);
      process.kill(victim.pid, 'SIGKILL');
      await eventually('a replacement worker to be forked', readyz, ({ workers }) => workers.length === WORKERS && !workers.some((worker) => worker.pid === victim.pid), 15_000);
      // Fresh connections for 3 s while the replacement loads: each must reach a worker that can decide.
      const outcomes = new Map<string, number>();
      const until = performance.now() + 3_000;
      while (performance.now() < until) {
        for (const answer of await checkOnNewConnections(apiKey).catch((error: Error) => [error.message])) {
          outcomes.set(String(answer), (outcomes.get(String(answer)) ?? 0) + 1);
        }
      }
      assert.deepEqual([...outcomes.keys()], ['allow'], JSON.stringify([...outcomes]));
      await locker.query('COMMIT');
      await eventually('the replacement to be ready', readyz, ({ status }) => status === 'ready', 15_000);
      assert.deepEqual(await checkOnNewConnections(apiKey), Array(CONNECTIONS).fill('allow'));
    } finally {
      await locker.end();
    }
  });

  it('answers new connections during SHUTDOWN_DELAY_SECONDS after a SIGTERM, as one process does', async () => {
    const delayed = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', WORKERS: String(WORKERS), SHUTDOWN_DELAY_SECONDS: '2' });
    const { apiKey } = await acceptedKey(delayed.grpcTarget);
    const exited = once(delayed.process, 'exit');
    delayed.process.kill('SIGTERM');
    await eventually('/readyz to say not ready', async () => (await fetch(`${delayed.httpBase}/readyz`)).status, (status) => status === 503, 5_000);
    assert.deepEqual(await checkOnNewConnections(apiKey, delayed.grpcTarget), Array(CONNECTIONS).fill('allow'));
    const [code] = (await exited) as [number | null];
    assert.equal(code, 0, delayed.output());
  });

  it('drains every worker on SIGTERM and exits 0 with none left', async () => {
    // A service of its own: the others' tests go on with theirs.
    const stopping = await startWorkers();
    await acceptedKey(stopping.grpcTarget);
    const workers = ((await (await fetch(`${stopping.httpBase}/readyz`)).json()) as { workers: WorkerReadiness[] }).workers;
    const exited = once(stopping.process, 'exit');
    stopping.process.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    assert.equal(code, 0, stopping.output());
    assert.deepEqual(workers.map((worker) => worker.pid).filter(isAlive), []);
    assert.equal(stopping.output().split('\n').filter((line) => line.includes('"worker stopped"')).length >= WORKERS, true);
  });
});

describe('serve with WORKERS=2 that cannot start', () => {
  it('stops with the reason when the gRPC port is taken, before it forks a worker', async () => {
    const database = await freshDatabase();
    const blocker = (await import('node:net')).createServer();
    try {
      await new Promise<void>((resolveListen) => blocker.listen(0, '127.0.0.1', resolveListen));
      const { port } = blocker.address() as import('node:net').AddressInfo;
      const started = startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', WORKERS: '2', GRPC_PORT: String(port) });
      await assert.rejects(started, (error: Error) => {
        assert.match(error.message, /serve exited with 1/);
        assert.match(error.message, new RegExp(`cannot listen for gRPC on 127\\.0\\.0\\.1:${port}: .*(EADDRINUSE|address already in use)`, 'i'));
        assert.doesNotMatch(error.message, /"worker":/);
        return true;
      });
    } finally {
      blocker.close();
      await database.drop();
    }
  });

  it('stops with the reason instead of replacing workers that fail before they can decide', async () => {
    const database = await freshDatabase();
    try {
      const missing = '/nonexistent/sitekey-authz-test/tls.pem';
      const started = startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', WORKERS: '2', GRPC_TLS_CERT_FILE: missing, GRPC_TLS_KEY_FILE: missing });
      await assert.rejects(started, (error: Error) => {
        assert.match(error.message, /serve exited with 1/);
        assert.match(error.message, /exited with code 1 before it could decide/);
        assert.match(error.message, /tls\.pem/);
        return true;
      });
    } finally {
      await database.drop();
    }
  });
});
