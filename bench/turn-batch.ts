import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PARTNER } from './check-path.js';
import { BENCH_CLIENT_IP, encodeCheckRequest, grpcFrame, partnerBody } from './check-requests.js';
import { cpuPlan, pinProcesses } from './cpu-pinning.js';
import { ensureH2load } from './h2load.js';
import { alternatingRounds, measure, median, SATURATION, warmUp, type LoadRun } from './serve-bench.js';
import { startScriptServer, withStopped, type BenchServer } from './server-process.js';
import { positiveIntegerSetting } from './settings.js';
import { assertVerdict } from './verify-once.js';

/**
 * `node dist/bench/turn-batch.js`: what answering the checks of one event-loop turn together
 * (`answerAfterTurn`, src/common/turn-batch.ts) earns serve under saturating load. Two processes run
 * the same Check handler behind serve's gRPC server (turn-batch-server.ts), one with the turn batch, one
 * answering each check within its Check call; h2load as make bench's saturation rows, alternating round by
 * round, each process alone on its CPU. Prints each way's req/s and CPU a check, and the gain.
 * BENCH_SECONDS (10) and BENCH_ROUNDS (3) as for make bench.
 */
const seconds = positiveIntegerSetting('BENCH_SECONDS', 10, 'seconds');
const rounds = positiveIntegerSetting('BENCH_ROUNDS', 3, 'rounds');
const SERVER = fileURLToPath(new URL('turn-batch-server.js', import.meta.url));

ensureH2load();
const workDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-turn-batch-'));
const servers: BenchServer[] = [];
try {
  const partnerKey = randomUUID();
  const path = join(workDir, 'allow.bin');
  const message = encodeCheckRequest({ authorization: `${PARTNER}:${partnerKey}`, body: partnerBody(PARTNER, partnerKey), sourceAddress: BENCH_CLIENT_IP });
  await writeFile(path, grpcFrame(message));
  const files = [{ request: { name: 'allow', expected: 'allow' as const, message }, path }];
  for (const mode of ['after-turn', 'at-once']) {
    servers.push(await startScriptServer({ name: `answered ${mode}`, script: SERVER, args: [partnerKey, mode], workDir }));
  }
  const [afterTurn, atOnce] = servers as [BenchServer, BenchServer];
  for (const server of servers) await assertVerdict(server.name, server.grpcPort, files[0]!.request);
  const plan = cpuPlan();
  if (plan !== undefined) pinProcesses(servers.flatMap((server) => server.pids()), plan.servers);
  const shape = { ...SATURATION, seconds, ...(plan ? { cpus: plan.load } : {}) };
  const alone = (server: BenchServer) => servers.filter((other) => other !== server);
  for (const server of servers) await withStopped(alone(server), () => warmUp(server, files, { ...shape, seconds: Math.max(1, Math.round(seconds * 0.3)) }));
  const measured = await alternatingRounds(
    [[afterTurn, atOnce]],
    files,
    shape,
    rounds,
    (server, load, loadShape) => withStopped(alone(server), () => measure(server, load, loadShape, undefined)),
    (line) => console.log(line),
  );
  const of = (runs: readonly LoadRun[]) => ({
    requestsPerSecond: median(runs.map((run) => run.requestsPerSecond)),
    cpuMicros: median(runs.map((run) => run.cpuMicrosPerCheck)),
  });
  const batched = of(measured.map((round) => round.serve));
  const plain = of(measured.map((round) => round.noop));
  console.log(
    `the turn batch: ${batched.requestsPerSecond.toFixed(0)} req/s at ${batched.cpuMicros.toFixed(1)} µs CPU a check; ` +
      `each check answered at once: ${plain.requestsPerSecond.toFixed(0)} req/s at ${plain.cpuMicros.toFixed(1)} µs; ` +
      `the batch answers ${((batched.requestsPerSecond / plain.requestsPerSecond - 1) * 100).toFixed(1)} % more checks a second ` +
      `and saves ${(plain.cpuMicros - batched.cpuMicros).toFixed(1)} µs of CPU a check (medians of ${rounds} rounds, h2load -c${SATURATION.connections} -m${SATURATION.streams} -D ${seconds})`,
  );
} finally {
  for (const server of servers) await server.stop();
  await rm(workDir, { recursive: true, force: true });
}
