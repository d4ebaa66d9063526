import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { isAlive } from '../../src/embedded/embedded-postgres.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { eventually } from '../support/eventually.js';
import { samples } from '../support/exposition.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const WORKERS = 2;
// Enough connections that the cluster's round-robin hands each worker several.
const CONNECTIONS = 6;

interface WorkerReadiness {
  readonly worker: number;
  readonly pid: number;
  readonly ready: boolean;
}

/** WORKERS=2: several processes answer checks on one port, with one /readyz and one /metrics. */
describe('serve with WORKERS=2', () => {
  let database: TestDatabase;
  let service: RunningService;

  const request = (key: string) => ({ authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) });
  const readyz = async () => (await (await fetch(`${service.httpBase}/readyz`)).json()) as { status: string; workers: WorkerReadiness[] };
  const metric = async (name: string) => samples(await (await fetch(`${service.httpBase}/metrics`)).text(), name).get('') ?? 0;
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

describe('serve with WORKERS=2 whose workers cannot start', () => {
  it('stops with the reason instead of replacing them forever', async () => {
    const database = await freshDatabase();
    const blocker = (await import('node:net')).createServer();
    try {
      await new Promise<void>((resolveListen) => blocker.listen(0, '127.0.0.1', resolveListen));
      const { port } = blocker.address() as import('node:net').AddressInfo;
      const started = startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', WORKERS: '2', GRPC_PORT: String(port) });
      await assert.rejects(started, (error: Error) => {
        assert.match(error.message, /serve exited with 1/);
        assert.match(error.message, /exited with code 1 before it listened/);
        assert.match(error.message, /EADDRINUSE|address already in use/i);
        return true;
      });
    } finally {
      blocker.close();
      await database.drop();
    }
  });
});
