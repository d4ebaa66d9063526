import { setTimeout as sleep } from 'node:timers/promises';
import { GRPC_LIMITS } from '../src/envoy/grpc-server.js';
import { ensureH2load, commandLine, h2loadArguments, type LoadShape } from './h2load.js';
import { notTheImageNode, readImageNodeMajor } from './image-node.js';
import { describeMachine, loadLine, machineLine } from './machine.js';
import { recordRun, RESULTS_FILE } from './results-file.js';
import { measure, openBenchFixture, SATURATION, warmUp, type LoadRun } from './serve-bench.js';
import { startServe, type BenchServer } from './server-process.js';
import { positiveIntegerSetting } from './settings.js';
import { assertVerdict } from './verify-once.js';

/**
 * `make soak`: one `serve` at a fixed rate, half of its saturation (measured first, or SOAK_RATE req/s),
 * for SOAK_SECONDS (600), its resident memory, V8 heap and open descriptors sampled every 10 s.
 * Writes its section in bench/RESULTS.md as the latest soak, and its headline in the history table.
 */
const SAMPLE_EVERY_MS = 10_000;
/** RSS is flat when the highest sample of the last third is at most this much above the highest of the first third. */
const FLAT_GROWTH = 0.05;
const MIB = 2 ** 20;
/**
 * h2load runs in segments of at most half of serve's maximum connection age: at that age serve sends
 * GOAWAY, which Envoy answers by opening a new connection, and h2load by failing the streams it had in
 * flight. Each segment opens new connections, as Envoy would.
 */
const SEGMENT_SECONDS = GRPC_LIMITS.maxConnectionAgeMs / 2 / 1000;

interface Sample {
  readonly atSeconds: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly fds: number;
}

const log = (line: string) => console.log(line);
const machine = describeMachine();
const startedAt = new Date();
const soakSeconds = positiveIntegerSetting('SOAK_SECONDS', 600, 'seconds');
const fixedRate = process.env.SOAK_RATE ? positiveIntegerSetting('SOAK_RATE', 1, 'requests per second') : undefined;

let h2loadVersion: string;
try {
  h2loadVersion = ensureH2load();
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}

const fixture = await openBenchFixture(process.env.DATABASE_URL || undefined, log);
const allow = [fixture.files.get('allow')!];
let serve: BenchServer | undefined;
let section: string[];
try {
  const server = await startServe({ name: 'serve-soak', databaseUrl: fixture.database.url, workDir: fixture.workDir });
  serve = server;
  await assertVerdict('serve', server.grpcPort, fixture.credentials.requests.allow);
  await warmUp(server, allow, { ...SATURATION, seconds: 3 });
  let rate = fixedRate;
  let saturationNote = `SOAK_RATE=${fixedRate} req/s`;
  if (rate === undefined) {
    const saturation = await measure(server, allow, { ...SATURATION, seconds: 10 }, fixture.database);
    rate = Math.round(saturation.requestsPerSecond / 2);
    saturationNote = `half of serve's saturation just before: ${Math.round(saturation.requestsPerSecond)} req/s with h2load -c4 -m32 -D 10`;
  }
  const ratePerConnection = Math.max(1, Math.round(rate / SATURATION.connections));
  const shape: LoadShape = { ...SATURATION, seconds: soakSeconds, ratePerConnection };
  log(`soak: ${ratePerConnection * SATURATION.connections} req/s for ${soakSeconds} s, sampling every ${SAMPLE_EVERY_MS / 1000} s`);

  const samples: Sample[] = [];
  const sampleNow = async (started: number) => {
    const [report] = (await server.probe()).filter((r) => r.pid === server.pid);
    const { rssBytes, fds } = server.memory();
    samples.push({ atSeconds: Math.round((performance.now() - started) / 1000), rssBytes, heapUsedBytes: report?.heapUsedBytes ?? Number.NaN, fds });
  };
  const started = performance.now();
  const sampler = async (load: Promise<unknown>) => {
    let finished = false;
    void load.finally(() => (finished = true)).catch(() => undefined);
    while (!finished) {
      await sampleNow(started);
      const last = samples.at(-1)!;
      log(`  ${String(last.atSeconds).padStart(4)} s  rss ${(last.rssBytes / MIB).toFixed(1)} MiB  heap ${(last.heapUsedBytes / MIB).toFixed(1)} MiB  fds ${last.fds}`);
      await Promise.race([sleep(SAMPLE_EVERY_MS), load.catch(() => undefined)]);
    }
    await sampleNow(started);
  };
  const segments: LoadRun[] = [];
  for (let done = 0; done < soakSeconds; done += SEGMENT_SECONDS) {
    segments.push(await measure(server, allow, { ...shape, seconds: Math.min(SEGMENT_SECONDS, soakSeconds - done) }, fixture.database, sampler));
  }
  const checks = segments.reduce((total, segment) => total + segment.checks, 0);
  const perCheck = (pick: (segment: LoadRun) => number) => segments.reduce((total, segment) => total + pick(segment) * segment.checks, 0) / checks;
  const requestsPerSecond = segments.reduce((total, segment) => total + segment.requestsPerSecond * segment.seconds, 0) / soakSeconds;
  const statements = segments.reduce((total, segment) => total + (segment.statements?.total ?? 0), 0);

  // After the first minute (or quarter, if shorter): start-up and the first full resyncs are not a trend.
  const settleSeconds = Math.min(60, soakSeconds / 4);
  const settled = samples.filter((s) => s.atSeconds >= settleSeconds);
  const third = Math.max(1, Math.floor(settled.length / 3));
  const maxRss = (list: readonly Sample[]) => Math.max(...list.map((s) => s.rssBytes));
  const early = maxRss(settled.slice(0, third));
  const late = maxRss(settled.slice(-third));
  const growth = late / early - 1;
  const flat = growth <= FLAT_GROWTH;
  // Least-squares slope over the settled samples, for the reader: MiB per hour.
  const meanT = settled.reduce((a, s) => a + s.atSeconds, 0) / settled.length;
  const meanR = settled.reduce((a, s) => a + s.rssBytes, 0) / settled.length;
  const slope =
    settled.reduce((a, s) => a + (s.atSeconds - meanT) * (s.rssBytes - meanR), 0) /
    Math.max(1, settled.reduce((a, s) => a + (s.atSeconds - meanT) ** 2, 0));
  const row = (name: string, pick: (s: Sample) => number, unit: (v: number) => string) => {
    const values = samples.map(pick);
    return `| ${name} | ${unit(values[0]!)} | ${unit(values.at(-1)!)} | ${unit(Math.max(...values))} |`;
  };
  const mib = (v: number) => `${(v / MIB).toFixed(1)} MiB`;
  const stamp = startedAt.toISOString().replace(/:\d\d\.\d+Z$/, 'Z').replace('T', ' ');
  section = [
    `## ${stamp} — \`make soak\`: serve at half of saturation for ${soakSeconds} s; ${machine.cores} cores, Node ${machine.node}`,
    '',
    `Machine: ${machineLine(machine)}; ${h2loadVersion}; ${fixture.database.description}; load average at start (1 / 5 / 15 min): ${loadLine(machine)}.`,
    `Command: \`SOAK_SECONDS=${soakSeconds}${fixedRate ? ` SOAK_RATE=${fixedRate}` : ''} make soak\` (\`node dist/bench/image-node.js soak.js\`): ` +
      `${ratePerConnection * SATURATION.connections} req/s (${saturationNote}):`,
    '',
    '```sh',
    `${commandLine('h2load', h2loadArguments(server.grpcPort, allow[0]!.path, { ...shape, seconds: Math.min(SEGMENT_SECONDS, soakSeconds) })).replaceAll(fixture.workDir, '$BENCH_DIR')}   # repeated until ${soakSeconds} s`,
    '```',
    '',
    ...notTheImageNode(machine.node, readImageNodeMajor()),
    `**RSS ${flat ? 'flat' : 'not flat'}:** the highest RSS of the last third of the samples (after the first ${settleSeconds} s) is ` +
      `${Math.abs(growth * 100).toFixed(1)} % ${growth >= 0 ? 'above' : 'below'} the highest of the first third (flat: at most ${FLAT_GROWTH * 100} % above); ` +
      `least-squares trend ${((slope * 3600) / MIB).toFixed(1)} MiB per hour.`,
    '',
    `| sampled every ${SAMPLE_EVERY_MS / 1000} s (${samples.length} samples) | first | last | max |`,
    '|---|---|---|---|',
    row('resident memory (RSS)', (s) => s.rssBytes, mib),
    row('V8 heap used', (s) => s.heapUsedBytes, mib),
    row('open file descriptors', (s) => s.fds, String),
    '',
    `${checks.toLocaleString('en')} checks in ${segments.length} h2load run(s) of at most ${SEGMENT_SECONDS} s (new connections each, as Envoy makes after serve's GOAWAY at ` +
      `${GRPC_LIMITS.maxConnectionAgeMs / 60_000} min), all allowed (counted in /metrics as h2load was answered), ${requestsPerSecond.toFixed(0)} req/s; ` +
      `${perCheck((segment) => segment.cpuMicrosPerCheck).toFixed(1)} µs CPU and ${Math.round(perCheck((segment) => segment.allocatedBytesPerCheck)).toLocaleString('en')} heap bytes allocated per check; ` +
      `${statements} database statements in all.`,
    '',
    '<details><summary>samples</summary>',
    '',
    '| s | RSS MiB | heap MiB | fds |',
    '|---|---|---|---|',
    ...samples.map((s) => `| ${s.atSeconds} | ${(s.rssBytes / MIB).toFixed(1)} | ${(s.heapUsedBytes / MIB).toFixed(1)} | ${s.fds} |`),
    '',
    '</details>',
  ];
  log(`RSS ${flat ? 'flat' : 'NOT flat'}: ${(growth * 100).toFixed(1)} % (${mib(early)} → ${mib(late)}), trend ${((slope * 3600) / MIB).toFixed(1)} MiB/h`);
} finally {
  await serve?.stop();
  await fixture.close(log);
}
await recordRun(section);
console.log(`wrote the run as the latest in ${RESULTS_FILE}, and its headline in the history table`);
