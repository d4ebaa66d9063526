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
import { positiveIntegerSetting, wordsSetting } from './settings.js';
import { podLimits } from '../test/deploy/pod-limits.js';
import { assertVerdict } from './verify-once.js';

interface Variant {
  readonly name: string;
  readonly nodeArguments: readonly string[];
}

const POD = podLimits().nodeOptions;

/** Each comparison: the way serve runs first, the way it is measured against second. */
const COMPARISONS: Record<string, { readonly what: string; readonly ways: readonly [Variant, Variant] }> = {
  // make bench's serve and no-ops run without the pod's heap bound: this row says what the bound costs.
  'pod-options': {
    what: `the pod's Node options (${POD.join(' ')}) against none, as make bench's serve runs`,
    ways: [
      { name: "the pod's options", nodeArguments: POD },
      { name: 'no options', nodeArguments: [] },
    ],
  },
};

/**
 * `node dist/bench/handler-variants.js pod-options`: serve's check path run one way against
 * another under saturating load. Two processes run the same Check handler behind serve's gRPC server
 * (handler-server.ts: 10,000 sites, serve's observers) with different Node options; h2load as make bench's
 * saturation rows, alternating round by round, each process alone on its CPU. Prints each way's req/s and
 * CPU a check, and the difference. BENCH_SECONDS (10) and BENCH_ROUNDS (3) as for make bench.
 * `HANDLER_NODE_ARGS='<options>' node dist/bench/handler-variants.js tried` measures other options against the pod's.
 */
const tried = wordsSetting('HANDLER_NODE_ARGS');
if (tried !== undefined) {
  COMPARISONS.tried = {
    what: `HANDLER_NODE_ARGS (${tried.join(' ')}) against the pod's options`,
    ways: [{ name: 'HANDLER_NODE_ARGS', nodeArguments: tried }, { name: "the pod's options", nodeArguments: POD }],
  };
}
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
    servers.push(await startScriptServer({ name: way.name, script: SERVER, args: [partnerKey], workDir, nodeArguments: way.nodeArguments }));
  }
  const [firstServer, secondServer] = servers as [BenchServer, BenchServer];
  for (const server of servers) await assertVerdict(server.name, server.grpcPort, files[0]!.request);
  const plan = cpuPlan();
  if (plan !== undefined) pinProcesses(servers.flatMap((server) => server.pids()), plan.servers);
  const shape = { ...SATURATION, seconds, ...(plan ? { cpus: plan.load } : {}) };
  const alone = (server: BenchServer) => servers.filter((other) => other !== server);
  for (const server of servers) await withStopped(alone(server), () => warmUp(server, files, { ...shape, seconds: Math.max(1, Math.round(seconds * 0.3)) }));
  const measured = await alternatingRounds(
    [[firstServer, secondServer]],
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
  const first = of(measured.map((round) => round.serve));
  const other = of(measured.map((round) => round.noop));
  const [firstWay, otherWay] = comparison.ways;
  console.log(`${comparisonName}: ${comparison.what}`);
  console.log(
    `  ${firstWay.name}: ${first.requestsPerSecond.toFixed(0)} req/s at ${first.cpuMicros.toFixed(1)} µs CPU a check; ` +
      `${otherWay.name}: ${other.requestsPerSecond.toFixed(0)} req/s at ${other.cpuMicros.toFixed(1)} µs; ` +
      `${((first.requestsPerSecond / other.requestsPerSecond) * 100).toFixed(1)} % of its checks a second, ` +
      `${(first.cpuMicros - other.cpuMicros).toFixed(1)} µs more CPU a check (medians of ${rounds} rounds, h2load -c${SATURATION.connections} -m${SATURATION.streams} -D ${seconds})`,
  );
} finally {
  for (const server of servers) await server.stop();
  await rm(workDir, { recursive: true, force: true });
}
