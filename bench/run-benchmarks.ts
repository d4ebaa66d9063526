import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ensureH2load } from './h2load.js';
import { notTheImageNode, readImageNodeMajor } from './image-node.js';
import { describeMachine, loadLine, machineLine } from './machine.js';
import { recordRun, RESULTS_FILE } from './results-file.js';
import { serveBenchReport } from './serve-bench-report.js';
import { runServeBench, type BenchSettings } from './serve-bench.js';
import { positiveIntegerSetting } from './settings.js';

/**
 * `make bench`: the pure-Node benchmarks, each in its own process (a clean heap, and --expose-gc for
 * memory figures), one after another so they do not compete for the machine's cores; then `serve`
 * beside a no-op Check server under h2load (serve-bench.ts). Writes the run in bench/RESULTS.md as the
 * latest in full, and its headline as a row of the table of every run. BENCH_SECONDS (10), BENCH_ROUNDS (3) and BENCH_INSTANCES (3) shorten or lengthen the h2load part.
 */
const PURE_BENCHMARKS = ['decide.js', 'check-path.js', 'runtime-tricks.js', 'handler-variants.js pod-options', 'token-verify.js', 'hostile-bodies.js', 'snapshot-load.js', 'resync-stall.js', 'abuse.js'];

const machine = describeMachine();
const startedAt = new Date();
let failed = false;

const pureOutput: string[] = [];
for (const file of PURE_BENCHMARKS) {
  const [script, ...args] = file.split(' ') as [string, ...string[]];
  const path = fileURLToPath(new URL(script, import.meta.url));
  console.log(`\n== ${file}`);
  const result = spawnSync(process.execPath, ['--expose-gc', path, ...args], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  process.stdout.write(result.stdout);
  pureOutput.push(`== node --expose-gc dist/bench/${file}`, result.stdout.trimEnd());
  if (result.status !== 0) {
    failed = true;
    pureOutput.push(`(exited with ${result.status})`);
  }
}

const settings: BenchSettings = {
  seconds: positiveIntegerSetting('BENCH_SECONDS', 10, 'seconds'),
  rounds: positiveIntegerSetting('BENCH_ROUNDS', 3, 'rounds'),
  instances: positiveIntegerSetting('BENCH_INSTANCES', 3, 'pairs of processes'),
  databaseUrl: process.env.DATABASE_URL || undefined,
};

console.log('\n== serve beside a no-op Check server, under h2load');
let h2loadVersion: string | undefined;
let serveSection: string[];
try {
  h2loadVersion = ensureH2load();
  const results = await runServeBench(settings, (line) => console.log(line));
  serveSection = serveBenchReport(results);
} catch (error) {
  failed = true;
  const message = error instanceof Error ? error.message : String(error);
  console.error(`\nthe h2load part failed: ${message}`);
  if (h2loadVersion !== undefined) {
    // A broken measurement writes no figures: fix it and run again.
    console.error(`${RESULTS_FILE} not written`);
    process.exit(1);
  }
  serveSection = [`**The h2load part was not run:** ${message}`];
}

const stamp = startedAt.toISOString().replace(/:\d\d\.\d+Z$/, 'Z').replace('T', ' ');
const knobs = `BENCH_SECONDS=${settings.seconds} BENCH_ROUNDS=${settings.rounds} BENCH_INSTANCES=${settings.instances}${settings.databaseUrl ? ' DATABASE_URL=…' : ''}`;
await recordRun([
  `## ${stamp} — \`make bench\`: serve beside a no-op under h2load; ${machine.cores} cores, Node ${machine.node}`,
  '',
  `Machine: ${machineLine(machine)}; ${h2loadVersion ?? 'no h2load'}; load average at start (1 / 5 / 15 min): ${loadLine(machine)}.`,
  `Command: \`${knobs} make bench\` (\`node dist/bench/image-node.js run-benchmarks.js\`), ${Math.round((Date.now() - startedAt.getTime()) / 1000)} s in all.`,
  '',
  ...notTheImageNode(machine.node, readImageNodeMajor()),
  ...serveSection,
  '',
  '### The pure-Node benchmarks of the same run',
  '',
  '```',
  ...pureOutput,
  '```',
]);
console.log(`\nwrote the run as the latest in ${RESULTS_FILE}, and its headline in the history table`);
process.exitCode = failed ? 1 : 0;
