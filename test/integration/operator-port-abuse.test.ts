import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePorts } from '../../src/embedded/embedded-postgres.js';
import { startCheckLoadInChild, unexpectedOutcomes } from '../support/check-load.js';
import { seedSite } from '../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { pipelinedMetrics, silentConnectionsOnThread, slowLoris, type Attack } from '../support/operator-attacks.js';
import { operatorGet } from '../support/operator-http.js';
import { startService, type RunningService } from '../support/service.js';

const KEY = '5d0c7a1e-8b3f-4c2d-9e6a-1f4b7c0d2e83';
const CHECK = { authorization: `1001:${KEY}`, body: JSON.stringify({ siteid: 1001, apikey: KEY }), ip: '127.0.0.1' };
/** Half the pod's memory limit (1 GiB in deploy/kubernetes/base/deployment.yaml): a small installation under attack stays well inside it. */
const POD_MEMORY_LIMIT_BYTES = 512 * 1024 * 1024;
/** A probe not answered within this counts as failed, as kubelet's timeoutSeconds would have it. */
const PROBE_TIMEOUT_MS = 2_000;
/** How long each attack lasts. */
const ATTACK_MS = 4_000;

function residentBytes(pid: number): number {
  const line = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(line?.[1] ?? 0) * 1024;
}

/** /healthz every 100 ms on a connection of its own, as kubelet probes; true for each probe answered 200 in time. */
async function probeDuring(url: string, untilMs: number): Promise<boolean[]> {
  const probes: Array<Promise<boolean>> = [];
  while (performance.now() < untilMs) {
    probes.push(operatorGet(url, PROBE_TIMEOUT_MS).then((answer) => answer.status === 200, () => false));
    await sleep(100);
  }
  return Promise.all(probes);
}

function longestFailureRun(probes: readonly boolean[]): number {
  let longest = 0;
  let run = 0;
  for (const passed of probes) {
    run = passed ? 0 : run + 1;
    longest = Math.max(longest, run);
  }
  return longest;
}

/**
 * Attacks on the operator port (METRICS_PORT) of a real `serve`, while a caller in another process
 * keeps sending checks: the port must neither take the checks' CPU and memory nor keep probes out.
 */
describe('serve under attack on its operator port', () => {
  let database: TestDatabase;
  let service: RunningService;
  let probeBase = '';
  let peakRss = 0;
  let rssTimer: NodeJS.Timeout | undefined;

  before(async () => {
    database = await freshDatabase();
    await seedSite(database.url, { id: '1001', keys: [{ key: KEY }], cidrs: ['127.0.0.1/32'] });
    const [probePort] = await freePorts(1);
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', LOG_LEVEL: 'warn', PROBE_PORT: String(probePort) });
    probeBase = `http://127.0.0.1:${probePort}`;
    const pid = service.process.pid ?? 0;
    rssTimer = setInterval(() => (peakRss = Math.max(peakRss, residentBytes(pid))), 100);
  });

  after(async () => {
    clearInterval(rssTimer);
    await service?.stop();
    await database?.drop();
  });

  async function underAttack(launch: () => Attack, probed = `${service.httpBase}/healthz`): Promise<void> {
    const checks = startCheckLoadInChild(service.grpcTarget, CHECK, 2);
    await checks.answered(20, 10_000);
    const answeredBefore = checks.calls.length;
    const attack = launch();
    let probes: boolean[];
    try {
      probes = await probeDuring(probed, performance.now() + ATTACK_MS);
    } finally {
      attack.stop();
    }
    const answeredDuring = checks.calls.length - answeredBefore;
    const calls = await checks.stop();
    assert.deepEqual(unexpectedOutcomes(calls, 'allow'), new Map(), 'a check was not allowed');
    // Two callers one check at a time: a stalled event loop answers next to none in four seconds.
    assert.ok(answeredDuring >= 100, `only ${answeredDuring} checks answered during the attack`);
    assert.ok(longestFailureRun(probes) < 3, `/healthz failed ${longestFailureRun(probes)} times in a row (${probes.filter((p) => !p).length} of ${probes.length})`);
    assert.equal((await operatorGet(probed, PROBE_TIMEOUT_MS)).status, 200);
    assert.ok(peakRss < POD_MEMORY_LIMIT_BYTES, `RSS reached ${Math.round(peakRss / 2 ** 20)} MiB`);
  }

  it('answers checks and probes while 16 connections pipeline 500 GET /metrics each', async () => {
    await underAttack(() => pipelinedMetrics(service.httpBase, 16, 500));
  });

  it('answers checks and probes while 64 slow-loris connections drip headers, reconnecting when cut off', async () => {
    await underAttack(() => slowLoris(service.httpBase, 64));
  });

  it('answers checks, and probes on PROBE_PORT, while 400 silent connections a second and pipelined scrapes come to METRICS_PORT', async () => {
    const assertProbePortServesProbesOnly = async () => {
      assert.equal((await operatorGet(`${probeBase}/readyz`, PROBE_TIMEOUT_MS)).status, 200);
      assert.equal((await operatorGet(`${probeBase}/metrics`, PROBE_TIMEOUT_MS)).status, 404);
    };
    await assertProbePortServesProbesOnly();
    await underAttack(() => {
      const silent = silentConnectionsOnThread(service.httpBase, 400, '127.0.0.2');
      const scrapes = pipelinedMetrics(service.httpBase, 16, 500);
      return { describe: () => `${silent.describe()}; ${scrapes.describe()}`, stop: () => (silent.stop(), scrapes.stop()) };
    }, `${probeBase}/healthz`);
  });
});
