import { cpuPlan, pinProcesses } from './cpu-pinning.js';
import { ensureH2load, type LoadShape } from './h2load.js';
import { alternatingRounds, measure, median, openBenchFixture, SATURATION, warmUp, type LoadRun, type Pair, type RequestFile } from './serve-bench.js';
import { startNoop, startServe, withStopped, type BenchServer } from './server-process.js';
import { positiveIntegerSetting, wordsSetting } from './settings.js';

/**
 * `node dist/bench/serve-aging.js [token|102]`: make bench's saturation rounds in make bench's order (the
 * allowed request first, then a repeated token or a wrong key), with every run's CPU, GC and heap
 * allocation per check printed for `serve` and its floor, so that a `serve` process whose cost per check
 * changes between runs, and stays changed, shows which run it happened in. In make bench's runs, serve
 * processes that answered the allow at ~80 µs of CPU a check went on to answer the token at ~100, with
 * ~30 µs of GC a check where the floor spends ~20, at the same bytes allocated a check.
 *
 * AGING_SCRAPES=0 measures without reading serve's /metrics before and after each run (make bench reads
 * it to check each run's verdicts); AGING_SERVE_NODE_ARGS gives serve Node options (`--trace-deopt`,
 * `--trace-gc-nvp`, V8 flags to try), AGING_SERVE_ENV settings (`LAST_USED_FLUSH_SECONDS=3600 …`, to leave
 * out serve's own database traffic). BENCH_SECONDS (10), BENCH_ROUNDS (3) and BENCH_INSTANCES (3) as
 * for make bench; CPUs pinned as make bench pins them (BENCH_PIN=0: not).
 */
const KINDS = { token: 'allow-token', '102': 'deny-102' } as const;
const kind = process.argv[2] ?? 'token';
if (!Object.hasOwn(KINDS, kind)) {
  console.error(`unknown load ${JSON.stringify(kind)}; type one of: ${Object.keys(KINDS).join(', ')}`);
  process.exit(2);
}
const seconds = positiveIntegerSetting('BENCH_SECONDS', 10, 'seconds');
const rounds = positiveIntegerSetting('BENCH_ROUNDS', 3, 'rounds');
const instances = positiveIntegerSetting('BENCH_INSTANCES', 3, 'processes');
const scrapes = process.env.AGING_SCRAPES !== '0';
const serveNodeArguments = wordsSetting('AGING_SERVE_NODE_ARGS') ?? [];
const serveEnvironment = Object.fromEntries(
  (wordsSetting('AGING_SERVE_ENV') ?? []).map((setting) => {
    const equals = setting.indexOf('=');
    if (equals < 1) {
      console.error(`AGING_SERVE_ENV takes NAME=value settings separated by spaces, e.g. "LAST_USED_FLUSH_SECONDS=3600"; not ${JSON.stringify(setting)}`);
      process.exit(2);
    }
    return [setting.slice(0, equals), setting.slice(equals + 1)];
  }),
);

ensureH2load();
const fixture = await openBenchFixture(process.env.DATABASE_URL || undefined, (line) => console.log(line));
const { siteId, keyId, tokenClient, maskedWrongKey } = fixture.credentials;
const servers: BenchServer[] = [];
try {
  const start = async (starting: Promise<BenchServer>) => {
    const server = await starting;
    servers.push(server);
    return server;
  };
  const serves: BenchServer[] = [];
  const allowFloors: BenchServer[] = [];
  const kindFloors: BenchServer[] = [];
  for (let index = 1; index <= instances; index++) {
    serves.push(await start(startServe({ name: `serve ${index}`, databaseUrl: fixture.database.url, workDir: fixture.workDir, env: { ...fixture.issuer.env, ...serveEnvironment }, nodeArguments: serveNodeArguments })));
    allowFloors.push(await start(startNoop({ workDir: fixture.workDir, siteId, keyId })));
    kindFloors.push(await start(startNoop({ workDir: fixture.workDir, siteId, keyId, ...(kind === 'token' ? { tokenClient } : { wrongKey: maskedWrongKey }) })));
  }
  const plan = cpuPlan();
  if (plan !== undefined) pinProcesses(servers.flatMap((server) => server.pids()), plan.servers);
  const shape = { ...SATURATION, seconds, ...(plan ? { cpus: plan.load } : {}) };
  // Every other server stopped while one is measured, as make bench does.
  const others = (server: BenchServer) => servers.filter((other) => other !== server);
  const measureAlone = (server: BenchServer, files: readonly RequestFile[], load: LoadShape) =>
    withStopped(others(server), () => measure(scrapes ? server : { ...server, metricsUrl: undefined }, files, load, fixture.database));
  const perCheck = (measured: LoadRun) =>
    `${measured.requestsPerSecond.toFixed(0)} req/s, ${measured.cpuMicrosPerCheck.toFixed(1)} µs CPU, ${measured.gcMicrosPerCheck.toFixed(1)} µs GC (${measured.collections.map(({ type, count, microsPerCheck, survivedBytesPerCheck }) => `${count} ${type} ${microsPerCheck.toFixed(1)} µs, ${survivedBytesPerCheck.toFixed(0)} B kept`).join(', ')}), ${measured.allocatedBytesPerCheck.toFixed(0)} B a check`;

  console.log(`${instances} serve processes, ${scrapes ? "serve's /metrics read before and after each run, as make bench does" : "serve's /metrics not read"}; serve's Node options: ${serveNodeArguments.join(' ') || 'none'}; serve's settings beyond make bench's: ${process.env.AGING_SERVE_ENV?.trim() || 'none'}`);
  for (const [phase, file, floors] of [
    ['allow', fixture.files.get('allow')!, allowFloors],
    [kind, fixture.files.get(KINDS[kind as keyof typeof KINDS])!, kindFloors],
  ] as const) {
    const pairs: Pair[] = serves.map((serve, index) => [serve, floors[index]!]);
    for (const server of pairs.flat()) await withStopped(others(server), () => warmUp(server, [file], { ...shape, seconds: 3 }));
    const runs = await alternatingRounds(pairs, [file], shape, rounds, measureAlone, () => {});
    runs.forEach((run, index) => {
      const [serve, floor] = pairs[run.pair - 1]!;
      const ratio = (100 * run.serve.requestsPerSecond) / run.noop.requestsPerSecond;
      console.log(`${phase} round ${Math.floor(index / instances) + 1}, ${serve.name}: ${perCheck(run.serve)}; ${floor.name}: ${perCheck(run.noop)}; ${ratio.toFixed(0)} %`);
    });
    const ratios = runs.map((run) => run.serve.requestsPerSecond / run.noop.requestsPerSecond);
    console.log(`${phase}: serve at ${(100 * median(ratios)).toFixed(1)} % of the floor (median of ${ratios.length} runs)`);
  }
} finally {
  for (const server of servers) await server.stop();
  await fixture.close((line) => console.log(line));
}
