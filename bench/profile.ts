import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureH2load } from './h2load.js';
import { measure, openBenchFixture, SATURATION, warmUp, type RequestFile } from './serve-bench.js';
import { startNoop, startServe, type BenchServer } from './server-process.js';
import { positiveIntegerSetting } from './settings.js';

/**
 * `node dist/bench/profile.js [allow|deny|102|token|64k]`: `serve` and the no-op under the same saturating load
 * as `make bench`, each with node --cpu-prof, and where their CPU goes per check, by library and by
 * function, counting only the samples taken during the measured load. The .cpuprofile files are kept
 * (open them in Chrome DevTools or speedscope). BENCH_SECONDS (15) sets the load's length.
 */
interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Where a function's code comes from, coarsely: the libraries a check passes through. */
function area(frame: ProfileNode['callFrame']): string {
  const { functionName, url } = frame;
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(program)') return 'native (V8, libuv, nghttp2, syscalls)';
  if (functionName === '(idle)') return 'idle';
  if (url.includes('@grpc/grpc-js')) return '@grpc/grpc-js';
  if (url.includes('protobufjs') || url.includes('@grpc/proto-loader')) return 'protobufjs';
  if (url.includes('pino') || url.includes('sonic-boom')) return 'pino (logging, with its redaction)';
  if (url.includes('prom-client')) return 'prom-client (metrics)';
  const ours = /\/dist\/(src|bench)\/([^/]+)\//.exec(url);
  if (ours) return `ours: ${ours[1]}/${ours[2]}/`;
  if (url.includes('node:internal/http2') || url === 'node:http2') return 'node http2 (JS)';
  if (url.startsWith('node:')) return 'node, other';
  return url === '' ? 'native (V8, libuv, nghttp2, syscalls)' : 'other';
}

/** Self time per node id, from the samples within [fromMicros, toMicros] on the process's monotonic clock. */
function selfTimes(profile: CpuProfile, fromMicros: number, toMicros: number): Map<number, number> {
  const self = new Map<number, number>();
  let at = profile.startTime;
  for (let index = 0; index < profile.samples.length; index++) {
    at += profile.timeDeltas[index] ?? 0;
    // A sample stands for the time until the next one.
    const duration = profile.timeDeltas[index + 1] ?? 0;
    if (at < fromMicros || at > toMicros) continue;
    const id = profile.samples[index]!;
    self.set(id, (self.get(id) ?? 0) + duration);
  }
  return self;
}

interface Breakdown {
  readonly byArea: Map<string, number>;
  readonly byFunction: Map<string, number>;
}

function breakdown(profile: CpuProfile, fromMicros: number, toMicros: number, checks: number): Breakdown {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const byArea = new Map<string, number>();
  const byFunction = new Map<string, number>();
  for (const [id, micros] of selfTimes(profile, fromMicros, toMicros)) {
    const frame = nodes.get(id)!.callFrame;
    const where = area(frame);
    if (where === 'idle') continue;
    byArea.set(where, (byArea.get(where) ?? 0) + micros / checks);
    const file = frame.url.replace(/^.*\/(node_modules|dist)\//, '').replace(/^file:\/\//, '');
    const name = `${frame.functionName || '(anonymous)'} ${file}${file ? `:${frame.lineNumber + 1}` : ''}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + micros / checks);
  }
  return { byArea, byFunction };
}

async function profiled(server: BenchServer, files: readonly RequestFile[], seconds: number, fixture: Awaited<ReturnType<typeof openBenchFixture>>, dir: string) {
  await warmUp(server, files, { ...SATURATION, seconds: 3 });
  const from = Number(process.hrtime.bigint() / 1000n);
  const run = await measure(server, files, { ...SATURATION, seconds }, fixture.database);
  const to = Number(process.hrtime.bigint() / 1000n);
  await server.stop();
  const file = (await readdir(dir)).find((name) => name.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error(`${server.name} wrote no profile in ${dir}`);
  const profile = JSON.parse(await readFile(join(dir, file), 'utf8')) as CpuProfile;
  return { run, breakdown: breakdown(profile, from, to, run.checks), path: join(dir, file) };
}

const kind = process.argv[2] ?? 'allow';
if (!['allow', 'deny', '102', 'token', '64k'].includes(kind)) {
  console.error('usage: node dist/bench/profile.js [allow|deny|102|token|64k]');
  process.exit(2);
}
const seconds = positiveIntegerSetting('BENCH_SECONDS', 15, 'seconds');
ensureH2load();
const fixture = await openBenchFixture(process.env.DATABASE_URL || undefined, console.log);
const root = await mkdtemp(join(tmpdir(), 'sitekey-authz-profile-'));
try {
  const { allow, allowToken, allowLargeBody, denials } = fixture.credentials.requests;
  const chosen =
    kind === 'deny' ? [allow, ...denials]
    : kind === '102' ? denials.filter((request) => request.name === 'deny-102')
    : [kind === '64k' ? allowLargeBody : kind === 'token' ? allowToken : allow];
  const files = chosen.map((request) => fixture.files.get(request.name)!);
  const { siteId, keyId, maskedWrongKey, tokenClient } = fixture.credentials;
  const serveDir = join(root, 'serve');
  const noopDir = join(root, 'no-op');
  const prof = (dir: string) => ['--cpu-prof', `--cpu-prof-dir=${dir}`];
  const serve = await profiled(
    await startServe({ name: 'serve', databaseUrl: fixture.database.url, workDir: fixture.workDir, env: fixture.issuer.env, nodeArguments: prof(serveDir) }),
    files, seconds, fixture, serveDir,
  );
  const noop = await profiled(
    await startNoop({ workDir: fixture.workDir, siteId, keyId, nodeArguments: prof(noopDir), ...(kind === '102' ? { wrongKey: maskedWrongKey } : kind === 'token' ? { tokenClient } : {}) }),
    files, seconds, fixture, noopDir,
  );
  console.log(`\n${kind}: serve ${serve.run.requestsPerSecond.toFixed(0)} req/s, ${serve.run.cpuMicrosPerCheck.toFixed(1)} µs CPU per check (/proc); ` +
    `no-op ${noop.run.requestsPerSecond.toFixed(0)} req/s, ${noop.run.cpuMicrosPerCheck.toFixed(1)} µs (profiling slows both)`);
  console.log('\nprofiled µs per check, by area         serve    no-op   difference');
  const areas = new Set([...serve.breakdown.byArea.keys(), ...noop.breakdown.byArea.keys()]);
  const rows = [...areas].map((name) => [name, serve.breakdown.byArea.get(name) ?? 0, noop.breakdown.byArea.get(name) ?? 0] as const);
  for (const [name, ours, floor] of rows.sort((a, b) => b[1] - b[2] - (a[1] - a[2]))) {
    console.log(`  ${name.padEnd(38)} ${ours.toFixed(1).padStart(6)} ${floor.toFixed(1).padStart(8)} ${(ours - floor).toFixed(1).padStart(10)}`);
  }
  const total = (b: Breakdown) => [...b.byArea.values()].reduce((sum, v) => sum + v, 0);
  console.log(`  ${'total'.padEnd(38)} ${total(serve.breakdown).toFixed(1).padStart(6)} ${total(noop.breakdown).toFixed(1).padStart(8)}`);
  console.log('\nserve: functions whose self time per check most exceeds the no-op\'s (µs)');
  const functions = [...serve.breakdown.byFunction].map(([name, micros]) => [name, micros - (noop.breakdown.byFunction.get(name) ?? 0)] as const);
  for (const [name, extra] of functions.sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${extra.toFixed(2).padStart(6)}  ${name}`);
  console.log(`\nprofiles: ${serve.path}\n          ${noop.path}`);
} finally {
  await fixture.close(console.log);
}
