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
import { podLimits } from '../test/deploy/pod-limits.js';
import { assertVerdict } from './verify-once.js';

interface Variant {
  readonly name: string;
  readonly answer: 'after-turn' | 'at-once';
  readonly nodeArguments: readonly string[];
}

const POD = podLimits().nodeOptions;
/** The pod's options, and V8's young generation as large as Node 26 makes it without a heap bound (64 MiB). */
const POD_WITH_YOUNG_GENERATION = [...POD, '--max-semi-space-size=32'];

/** Each comparison: the way serve runs first, the way it is measured against second. */
const COMPARISONS: Readonly<Record<string, { readonly what: string; readonly ways: readonly [Variant, Variant] }>> = {
  'turn-batch': {
    what: 'the checks of one event-loop turn answered together (answerAfterTurn, src/common/turn-batch.ts)',
    ways: [
      { name: 'answered after the turn', answer: 'after-turn', nodeArguments: [] },
      { name: 'each answered at once', answer: 'at-once', nodeArguments: [] },
    ],
  },
  'young-generation': {
    what: `the pod's Node options with --max-semi-space-size=32, against the pod's alone (${POD.join(' ')})`,
    ways: [
      { name: 'semi-spaces of 32 MiB', answer: 'after-turn', nodeArguments: POD_WITH_YOUNG_GENERATION },
      { name: "the heap bound's default", answer: 'after-turn', nodeArguments: POD },
    ],
  },
};

/**
 * `node dist/bench/handler-variants.js turn-batch|young-generation`: what one way of running serve's check
 * path earns under saturating load against another. Two processes run the same Check handler behind serve's
 * gRPC server (handler-server.ts: 10,000 sites, serve's observers), differing only in the comparison's way;
 * h2load as make bench's saturation rows, alternating round by round, each process alone on its CPU.
 * Prints each way's req/s and CPU a check, and the gain. BENCH_SECONDS (10) and BENCH_ROUNDS (3) as for
 * make bench.
 */
const comparisonName = process.argv[2] ?? '';
const comparison = COMPARISONS[comparisonName];
if (comparison === undefined) {
  console.error(`usage: handler-variants.js ${Object.keys(COMPARISONS).join('|')}`);
  process.exit(2);
}
const seconds = positiveIntegerSetting('BENCH_SECONDS', 10, 'seconds');
const rounds = positiveIntegerSetting('BENCH_ROUNDS', 3, 'rounds');
const SERVER = fileURLToPath(new URL('handler-server.js', import.meta.url));

ensureH2load();
const workDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-handler-'));
const servers: BenchServer[] = [];
try {
  const partnerKey = randomUUID();
  const path = join(workDir, 'allow.bin');
  const message = encodeCheckRequest({ authorization: `${PARTNER}:${partnerKey}`, body: partnerBody(PARTNER, partnerKey), sourceAddress: BENCH_CLIENT_IP });
  await writeFile(path, grpcFrame(message));
  const files = [{ request: { name: 'allow', expected: 'allow' as const, message }, path }];
  for (const way of comparison.ways) {
    servers.push(await startScriptServer({ name: way.name, script: SERVER, args: [partnerKey, way.answer], workDir, nodeArguments: way.nodeArguments }));
  }
  const [first, second] = servers as [BenchServer, BenchServer];
  for (const server of servers) await assertVerdict(server.name, server.grpcPort, files[0]!.request);
  const plan = cpuPlan();
  if (plan !== undefined) pinProcesses(servers.flatMap((server) => server.pids()), plan.servers);
  const shape = { ...SATURATION, seconds, ...(plan ? { cpus: plan.load } : {}) };
  const alone = (server: BenchServer) => servers.filter((other) => other !== server);
  for (const server of servers) await withStopped(alone(server), () => warmUp(server, files, { ...shape, seconds: Math.max(1, Math.round(seconds * 0.3)) }));
  const measured = await alternatingRounds(
    [[first, second]],
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
  const kept = of(measured.map((round) => round.serve));
  const other = of(measured.map((round) => round.noop));
  const [keptWay, otherWay] = comparison.ways;
  console.log(`${comparisonName}: ${comparison.what}`);
  console.log(
    `  ${keptWay.name}: ${kept.requestsPerSecond.toFixed(0)} req/s at ${kept.cpuMicros.toFixed(1)} µs CPU a check; ` +
      `${otherWay.name}: ${other.requestsPerSecond.toFixed(0)} req/s at ${other.cpuMicros.toFixed(1)} µs; ` +
      `${((kept.requestsPerSecond / other.requestsPerSecond - 1) * 100).toFixed(1)} % more checks a second, ` +
      `${(other.cpuMicros - kept.cpuMicros).toFixed(1)} µs of CPU a check saved (medians of ${rounds} rounds, h2load -c${SATURATION.connections} -m${SATURATION.streams} -D ${seconds})`,
  );
} finally {
  for (const server of servers) await server.stop();
  await rm(workDir, { recursive: true, force: true });
}
