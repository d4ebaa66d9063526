import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BenchIssuer } from './bench-issuer.js';
import { openBenchDatabase, statementsBetween, type BenchDatabase } from './bench-database.js';
import { BENCH_SITES, LARGE_BODY_BYTES, seedBenchSites, type BenchCredentials } from './bench-sites.js';
import { checkCounts, countsBetween, type CheckCounts } from './check-counts.js';
import { grpcFrame, type BenchRequest } from './check-requests.js';
import { onInterrupt } from './interrupt.js';
import { commandLine, h2loadArguments, h2loadCommand, latencyFromLog, runH2load, type H2loadResult, type LatencySummary, type LoadShape } from './h2load.js';
import { cpuPlan, pinProcesses, type CpuPlan } from './cpu-pinning.js';
import { startNoop, startServe, withStopped, type BenchServer } from './server-process.js';
import { assertVerdict } from './verify-once.js';
import type { ProbeReport } from './heap-probe.js';
import { openLoop, type OpenLoopRun } from './open-loop.js';

/** How long and how often: BENCH_SECONDS per measured run (10), BENCH_ROUNDS of serve beside the no-op (3). */
export interface BenchSettings {
  readonly seconds: number;
  readonly rounds: number;
  /** serve processes, each with its own floor, whose rounds the three ratio rows pool (BENCH_INSTANCES). */
  readonly instances: number;
  /** DATABASE_URL: the PostgreSQL server to make the bench's database on; unset: an embedded one. */
  readonly databaseUrl: string | undefined;
}

/** h2load's saturation load, as the performance targets are measured: 4 connections, 32 streams each. */
export const SATURATION = { connections: 4, streams: 32 } as const;
/** The deny-heavy mix: one h2load per request file, each on one connection. */
const MIX_PER_FILE = { connections: 1, streams: 16 } as const;

export interface RequestFile {
  readonly request: BenchRequest;
  readonly path: string;
}

/** One measured load on one server: h2load's counts and the server's own costs over exactly that load. */
export interface LoadRun {
  readonly server: string;
  readonly h2load: readonly H2loadResult[];
  readonly checks: number;
  readonly requestsPerSecond: number;
  readonly cpuMicrosPerCheck: number;
  readonly allocatedBytesPerCheck: number;
  readonly gcMicrosPerCheck: number;
  /** The collections behind gcMicrosPerCheck, by kind (Scavenge, MarkSweepCompact, …). */
  readonly collections: ReadonlyArray<{ readonly type: string; readonly count: number; readonly microsPerCheck: number; readonly survivedBytesPerCheck: number }>;
  /** serve only: statements its process tree issued on the database during the load. */
  readonly statements?: { readonly total: number; readonly byText: ReadonlyArray<{ query: string; calls: number }> };
  /** serve only: what /metrics counted, which must be what h2load was answered. */
  readonly counted?: CheckCounts;
  readonly latency?: LatencySummary;
  /** Processes in the server's tree at the end of the load (more than one with WORKERS). */
  readonly processes: number;
  readonly seconds: number;
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

interface ProbeTotals {
  readonly allocated: number;
  readonly gcMicros: number;
  readonly gcByType: Readonly<Record<string, { readonly collections: number; readonly micros: number; readonly survivedBytes: number }>>;
}

function probeTotals(reports: readonly ProbeReport[]): ProbeTotals {
  const gcByType: Record<string, { collections: number; micros: number; survivedBytes: number }> = {};
  for (const report of reports) {
    for (const [type, { collections, micros, survivedBytes }] of Object.entries(report.gcByType)) {
      const total = (gcByType[type] ??= { collections: 0, micros: 0, survivedBytes: 0 });
      total.collections += collections;
      total.micros += micros;
      total.survivedBytes += survivedBytes;
    }
  }
  return { allocated: sum(reports.map((r) => r.allocatedBytes)), gcMicros: sum(reports.map((r) => r.gcMicros)), gcByType };
}

/** Each kind of collection between two probes: how many, and its µs a check. */
function collectionsBetween(before: ProbeTotals, after: ProbeTotals, checks: number): LoadRun['collections'] {
  return Object.entries(after.gcByType).map(([type, { collections, micros, survivedBytes }]) => ({
    type,
    count: collections - (before.gcByType[type]?.collections ?? 0),
    microsPerCheck: (micros - (before.gcByType[type]?.micros ?? 0)) / checks,
    survivedBytesPerCheck: (survivedBytes - (before.gcByType[type]?.survivedBytes ?? 0)) / checks,
  })).filter(({ count }) => count > 0);
}

/**
 * A server that answered every request: h2load saw no failure, and `serve`'s /metrics counted each
 * file's verdict exactly for the requests h2load got an answer to, plus at most the streams that were
 * still in flight when h2load's duration ran out (answered after it stopped listening).
 */
function verify(server: BenchServer, files: readonly RequestFile[], results: readonly H2loadResult[], inFlight: number, counted: CheckCounts | undefined): void {
  for (const result of results) {
    // h2load counts a status when the response headers arrive, a success when the stream completes:
    // streams cut off by the end of the duration have the one and not the other.
    const cutOff = result.status2xx - result.succeeded;
    if (result.succeeded === 0 || cutOff < 0 || cutOff > inFlight || result.errored > 0 || result.timeout > 0) {
      throw new Error(`${server.name}: h2load did not get an HTTP 200 for every request it finished: ${JSON.stringify(result)}\n${result.command}`);
    }
  }
  if (counted === undefined) return;
  if (counted.undecided !== 0) throw new Error(`${server.name} left ${counted.undecided} checks undecided (UNAVAILABLE or INTERNAL) under load`);
  const expected = new Map<string, number>();
  files.forEach((file, index) => {
    const key = String(file.request.expected);
    expected.set(key, (expected.get(key) ?? 0) + results[index]!.succeeded);
  });
  for (const [verdict, count] of counted.byVerdict) {
    if (!expected.has(verdict)) throw new Error(`${server.name} counted ${count} checks as ${verdict}, which no request of this load should get`);
  }
  for (const [verdict, answered] of expected) {
    const got = counted.byVerdict.get(verdict) ?? 0;
    if (got < answered || got > answered + inFlight) {
      throw new Error(`${server.name} counted ${got} checks as ${verdict}, h2load was answered ${answered} (at most ${inFlight} more may have been in flight)`);
    }
  }
}

/**
 * One load on one server, with the server's CPU, heap allocation, database statements and /metrics
 * counts read just before and just after it; `whileRunning` (the soak's sampler) runs beside the load.
 */
export async function measure(
  server: BenchServer,
  files: readonly RequestFile[],
  shape: LoadShape,
  database: BenchDatabase | undefined,
  whileRunning?: (load: Promise<unknown>) => Promise<void>,
): Promise<LoadRun> {
  const isServe = server.metricsUrl !== undefined;
  const countsBefore = isServe ? await checkCounts(server.metricsUrl!) : undefined;
  const statementsBefore = isServe ? await database?.statements() : undefined;
  const probeBefore = probeTotals(await server.probe());
  const cpuBefore = server.cpuSeconds();
  const load = Promise.all(
    files.map((file, index) =>
      runH2load(h2loadArguments(server.grpcPort, file.path, { ...shape, ...(shape.logFile ? { logFile: `${shape.logFile}.${index}` } : {}) }), shape.cpus),
    ),
  );
  const [results] = await Promise.all([load, whileRunning?.(load)]);
  // Streams in flight when h2load stopped are still answered: let them finish before reading the counters.
  await sleep(250);
  const cpuAfter = server.cpuSeconds();
  const probeAfter = probeTotals(await server.probe());
  const statementsAfter = isServe ? await database?.statements() : undefined;
  const counted = isServe ? countsBetween(countsBefore!, await checkCounts(server.metricsUrl!)) : undefined;
  verify(server, files, results, files.length * shape.connections * shape.streams, counted);
  const checks = sum(results.map((r) => r.succeeded));
  const statements = statementsBefore && statementsAfter ? statementsBetween(statementsBefore, statementsAfter) : undefined;
  return {
    server: server.name,
    processes: server.pids().length,
    seconds: shape.seconds,
    h2load: results,
    checks,
    requestsPerSecond: sum(results.map((r) => r.requestsPerSecond)),
    cpuMicrosPerCheck: ((cpuAfter - cpuBefore) * 1e6) / checks,
    allocatedBytesPerCheck: (probeAfter.allocated - probeBefore.allocated) / checks,
    gcMicrosPerCheck: (probeAfter.gcMicros - probeBefore.gcMicros) / checks,
    collections: collectionsBetween(probeBefore, probeAfter, checks),
    ...(statements ? { statements: { total: sum(statements.map((s) => s.calls)), byText: statements } } : {}),
    ...(counted ? { counted } : {}),
    ...(shape.logFile ? { latency: latencyFromLog(`${shape.logFile}.0`) } : {}),
  };
}

/** serve and its floor, measured round by round; `pair` says which serve process and floor (from 1). */
export type Rounds = ReadonlyArray<{ readonly serve: LoadRun; readonly noop: LoadRun; readonly pair: number }>;

/** A serve process and the floor it is measured beside, in the same rounds. */
export type Pair = readonly [serve: BenchServer, floor: BenchServer];

export interface ServeBenchResults {
  readonly settings: BenchSettings;
  /** Where h2load and the servers ran; undefined: wherever the scheduler put them. */
  readonly cpuPlan: CpuPlan | undefined;
  readonly databaseDescription: string;
  readonly statementSource: string;
  readonly sites: number;
  readonly verification: readonly string[];
  readonly saturationRounds: Rounds;
  /** Saturation with one Bearer token repeated, against the no-op answering that token's allow. */
  readonly tokenRounds: Rounds;
  readonly latency: { readonly ratePerSecond: number; readonly serve: LoadRun; readonly noop: LoadRun };
  /** The same rate from the open-loop generator (open-loop.ts): latency from each request's intended send time. */
  readonly openLoop: { readonly ratePerSecond: number; readonly serve: OpenLoopRun; readonly noop: OpenLoopRun };
  /** One check at a time on one connection: the round trip with nothing queued in front of it. */
  readonly oneAtATime: { readonly serve: LoadRun; readonly noop: LoadRun };
  /** Saturation with the wrong-key request (102), against the no-op answering that same 102. */
  readonly wrongKeyRounds: Rounds;
  /** The allowed request beside one of each denial, against the no-op (which answers each with the allow). */
  readonly denyMix: { readonly rounds: Rounds; readonly files: readonly string[] };
  readonly largeBody: { readonly rounds: Rounds };
  /** Saturation of serve with WORKERS=1 and =2 (by that value) and of the no-op, alternating rounds. */
  readonly workerRounds: ReadonlyArray<{ readonly byCount: ReadonlyMap<string, LoadRun>; readonly noop: LoadRun }>;
  /** The h2load command lines, with the bench's ports and paths. */
  readonly commands: readonly string[];
}

async function writeRequestFiles(workDir: string, credentials: BenchCredentials): Promise<Map<string, RequestFile>> {
  const { allow, allowToken, allowLargeBody, denials } = credentials.requests;
  const files = new Map<string, RequestFile>();
  for (const request of [allow, allowToken, allowLargeBody, ...denials]) {
    const path = join(workDir, `${request.name}.grpc`);
    await writeFile(path, grpcFrame(request.message));
    files.set(request.name, { request, path });
  }
  return files;
}

/** What every h2load run of the bench stands on: a seeded database and the request files, in a temporary directory. */
export interface BenchFixture {
  readonly workDir: string;
  readonly database: BenchDatabase;
  /** The issuer of the bench's tokens: start `serve` with its `env` for it to accept them. */
  readonly issuer: BenchIssuer;
  readonly credentials: BenchCredentials;
  readonly files: ReadonlyMap<string, RequestFile>;
  close(log: (line: string) => void): Promise<void>;
}

export async function openBenchFixture(databaseUrl: string | undefined, log: (line: string) => void): Promise<BenchFixture> {
  const workDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-bench-'));
  const close = async (database?: BenchDatabase, issuer?: BenchIssuer) => {
    await issuer?.close().catch((error: unknown) => log(`closing the bench's JWKS server failed: ${String(error)}`));
    await database?.close().catch((error: unknown) => log(`closing the bench database failed: ${String(error)}`));
    await rm(workDir, { recursive: true, force: true });
  };
  let database: BenchDatabase | undefined;
  let issuer: BenchIssuer | undefined;
  const forget = onInterrupt(() => close(database, issuer));
  try {
    issuer = await BenchIssuer.start();
    database = await openBenchDatabase(databaseUrl);
    log(`database: ${database.description}; seeding ${BENCH_SITES.toLocaleString('en')} sites`);
    const credentials = await seedBenchSites(database.url, issuer);
    const files = await writeRequestFiles(workDir, credentials);
    const [opened, openedIssuer] = [database, issuer];
    return {
      workDir,
      database,
      issuer,
      credentials,
      files,
      close: async () => {
        forget();
        await close(opened, openedIssuer);
      },
    };
  } catch (error) {
    forget();
    await close(database, issuer);
    throw error;
  }
}

/** An unmeasured load first: JIT compilation, connection set-up and caches filling are not what a run measures. */
export async function warmUp(server: BenchServer, files: readonly RequestFile[], shape: LoadShape): Promise<void> {
  await Promise.all(files.map((file) => runH2load(h2loadArguments(server.grpcPort, file.path, shape), shape.cpus)));
}

/**
 * Each serve and its floor under the same load, `rounds` times; in each pair, and from one pair to the
 * next, they take turns to go first, so that a drift of the machine favours neither.
 */
export async function alternatingRounds(
  pairs: readonly Pair[],
  files: readonly RequestFile[],
  shape: LoadShape,
  rounds: number,
  measureOne: (server: BenchServer, files: readonly RequestFile[], shape: LoadShape) => Promise<LoadRun>,
  log: (line: string) => void,
): Promise<Rounds> {
  const measured: Array<Rounds[number]> = [];
  for (let round = 0; round < rounds; round++) {
    for (const [index, [serve, floor]] of pairs.entries()) {
      const order = (round + index) % 2 === 0 ? [serve, floor] : [floor, serve];
      const runs = new Map<BenchServer, LoadRun>();
      for (const server of order) runs.set(server, await measureOne(server, files, shape));
      measured.push({ serve: runs.get(serve)!, noop: runs.get(floor)!, pair: index + 1 });
      const which = pairs.length > 1 ? `, pair ${index + 1}` : '';
      log(`  round ${round + 1}${which}: ${serve.name} ${runs.get(serve)!.requestsPerSecond.toFixed(0)} req/s, ${floor.name} ${runs.get(floor)!.requestsPerSecond.toFixed(0)} req/s`);
    }
  }
  return measured;
}

/**
 * The service benchmark: a real `serve` (embedded PostgreSQL, BENCH_SITES sites, LOG_LEVEL=info) beside
 * the no-op Check server on the same gRPC stack, both under h2load, each in its own process.
 */
export async function runServeBench(settings: BenchSettings, log: (line: string) => void): Promise<ServeBenchResults> {
  const { seconds, rounds, instances } = settings;
  const warmSeconds = Math.max(1, Math.round(seconds * 0.3));
  const fixture = await openBenchFixture(settings.databaseUrl, log);
  const { workDir, database, issuer, credentials, files } = fixture;
  const running: BenchServer[] = [];
  const commands: string[] = [];
  const remember = (server: BenchServer, files: readonly RequestFile[], shape: LoadShape) => {
    for (const file of files) {
      const run = h2loadCommand(h2loadArguments(server.grpcPort, file.path, shape), shape.cpus);
      commands.push(commandLine(run.program, run.args));
    }
  };
  try {
    const file = (name: string) => files.get(name)!;
    const allow = [file('allow')];
    const allowToken = [file('allow-token')];

    // Token-based authentication on, as a site that migrates runs it: keys and tokens side by side.
    // Several processes of each, each serve paired with a floor of each kind: identical processes
    // differ by up to a fifth here for their whole life, so one pair would measure which was luckier.
    const serves: BenchServer[] = [];
    for (let instance = 1; instance <= instances; instance++) {
      serves.push(await startServe({ name: instance === 1 ? 'serve' : `serve ${instance}`, databaseUrl: database.url, workDir, env: issuer.env }));
      running.push(serves.at(-1)!);
    }
    const serve = serves[0]!;
    const floors = async (options: Omit<Parameters<typeof startNoop>[0], 'workDir' | 'siteId' | 'keyId'>) => {
      const started: BenchServer[] = [];
      for (let instance = 1; instance <= instances; instance++) {
        started.push(await startNoop({ workDir, siteId: credentials.siteId, keyId: credentials.keyId, ...options }));
        running.push(started.at(-1)!);
      }
      return started;
    };
    const noops = await floors({});
    const noop = noops[0]!;
    const noopTokens = await floors({ tokenClient: credentials.tokenClient });
    const noopWrongKeys = await floors({ wrongKey: credentials.maskedWrongKey });
    /** `server` under `load`, every other server stopped meanwhile (withStopped). */
    const alone = <T>(server: BenchServer, work: () => Promise<T>): Promise<T> => withStopped(running.filter((other) => other !== server), work);
    const measureAlone = (server: BenchServer, load: readonly RequestFile[], shape: LoadShape): Promise<LoadRun> =>
      alone(server, () => measure(server, load, shape, database));
    const pairsWith = (floorsOfKind: readonly BenchServer[]): Pair[] => serves.map((server, index) => [server, floorsOfKind[index]!]);
    const pairsText = instances === 1 ? 'one pair of processes' : `${instances} pairs of processes`;
    const plan = cpuPlan();
    if (plan !== undefined) pinProcesses(running.flatMap((server) => server.pids()), plan.servers);
    /** h2load on its own CPU when the servers have theirs. */
    const pinned = plan === undefined ? {} : { cpus: plan.load };

    // Each request's exact bytes once through a real gRPC client: the verdict h2load cannot see.
    const verification: string[] = [];
    for (const { request } of files.values()) await assertVerdict('serve', serve.grpcPort, request);
    verification.push(`serve: ${[...files.values()].map(({ request }) => `${request.name} → ${request.expected}`).join(', ')}`);
    /** A floor must answer `request` with serve's bytes, or the comparison would not be like for like. */
    const sameAnswer = async ([server, floor]: Pair, request: BenchRequest) => {
      const [ours, theirs] = [await assertVerdict(server.name, server.grpcPort, request), await assertVerdict(floor.name, floor.grpcPort, request)];
      if (!ours.bytes.equals(theirs.bytes)) throw new Error(`the CheckResponse of ${floor.name} to ${request.name} differs from serve's: the comparison would not be like for like`);
      return ours.bytes.length;
    };
    const wrongKey = credentials.requests.denials.find((denial) => denial.name === 'deny-102')!;
    for (const [floorsOfKind, requests] of [
      [noops, [credentials.requests.allow, credentials.requests.allowLargeBody]],
      [noopTokens, [credentials.requests.allowToken]],
      [noopWrongKeys, [wrongKey]],
    ] as const) {
      for (const request of requests) {
        let bytes = 0;
        for (const pair of pairsWith(floorsOfKind)) bytes = await sameAnswer(pair, request);
        verification.push(`${request.name}: each serve process and its ${floorsOfKind[0]!.name} (${pairsText}) answer the same ${bytes}-byte CheckResponse`);
      }
    }

    const saturation: LoadShape = { ...SATURATION, seconds, ...pinned };
    const warm = (server: BenchServer, load: readonly RequestFile[], shape: LoadShape) => warmUp(server, load, { ...shape, seconds: warmSeconds });

    /** Each serve against its floor under `load`: all warmed up, then alternating rounds; the command kept for the report. */
    const compare = async (pairs: readonly Pair[], load: readonly RequestFile[], shape: LoadShape) => {
      for (const pair of pairs) for (const server of pair) await warm(server, load, shape);
      const measured = await alternatingRounds(pairs, load, shape, rounds, measureAlone, log);
      remember(pairs[0]![0], load, shape);
      return measured;
    };
    const retire = async (servers: readonly BenchServer[]) => {
      for (const server of servers) {
        await server.stop();
        running.splice(running.indexOf(server), 1);
      }
    };
    const pairing = `${rounds} rounds of ${seconds} s each, ${pairsText}`;

    log(`saturation: ${pairing}, serve and no-op alternating`);
    const saturationRounds = await compare(pairsWith(noops), allow, saturation);
    await retire(noops.slice(1));

    // The token was verified once above (its first sighting); from then on serve finds it by hash.
    log(`repeated token: ${pairing}, serve and the token no-op alternating`);
    const tokenRounds = await compare(pairsWith(noopTokens), allowToken, saturation);
    await retire(noopTokens);

    log(`wrong key (102): ${pairing}, serve and the 102 no-op alternating`);
    const wrongKeyRounds = await compare(pairsWith(noopWrongKeys), [file('deny-102')], saturation);
    await retire([...noopWrongKeys, ...serves.slice(1)]);

    const serveSaturation = median(saturationRounds.map((r) => r.serve.requestsPerSecond));
    const ratePerConnection = Math.max(1, Math.round(serveSaturation / 2 / SATURATION.connections));
    const halfRate: LoadShape = { ...saturation, ratePerConnection };
    log(`latency at half of serve's saturation: ${ratePerConnection * SATURATION.connections} req/s`);
    const latencyServe = await measureAlone(serve, allow, { ...halfRate, logFile: join(workDir, 'latency-serve.log') });
    const latencyNoop = await measureAlone(noop, allow, { ...halfRate, logFile: join(workDir, 'latency-noop.log') });
    remember(serve, allow, { ...halfRate, logFile: join(workDir, 'latency-serve.log.0') });
    const openRate = ratePerConnection * SATURATION.connections;
    log(`open loop at the same rate: ${openRate} req/s for ${seconds} s each, latency from the intended send time`);
    const openServe = await alone(serve, () => openLoop(serve.grpcPort, credentials.requests.allow.message, openRate, seconds));
    const openNoop = await alone(noop, () => openLoop(noop.grpcPort, credentials.requests.allow.message, openRate, seconds));
    log(`  serve p50 ${openServe.p50Ms.toFixed(2)} p99 ${openServe.p99Ms.toFixed(2)} p99.9 ${openServe.p999Ms.toFixed(2)} ms; no-op p50 ${openNoop.p50Ms.toFixed(2)} p99 ${openNoop.p99Ms.toFixed(2)} p99.9 ${openNoop.p999Ms.toFixed(2)} ms`);
    log('latency of one check at a time');
    const single: LoadShape = { connections: 1, streams: 1, seconds, ...pinned };
    const singleServe = await measureAlone(serve, allow, { ...single, logFile: join(workDir, 'single-serve.log') });
    const singleNoop = await measureAlone(noop, allow, { ...single, logFile: join(workDir, 'single-noop.log') });
    remember(serve, allow, { ...single, logFile: join(workDir, 'single-serve.log.0') });

    log('deny-heavy mix: the allowed request beside one per error id, one h2load each');
    const mix = [file('allow'), ...credentials.requests.denials.map((request) => file(request.name))];
    const denyMixRounds = await compare([[serve, noop]], mix, { ...MIX_PER_FILE, seconds, ...pinned });

    log(`${LARGE_BODY_BYTES / 1024} KiB bodies`);
    const largeBodyRounds = await compare([[serve, noop]], [file('allow-64k')], saturation);

    await retire([serve]);
    // Workers are about using every core: nothing is pinned here, and the no-op gets every CPU back.
    if (plan !== undefined) pinProcesses(noop.pids(), plan.all);
    const unpinned: LoadShape = { ...SATURATION, seconds };
    log(`workers: serve with WORKERS=1 and WORKERS=2 beside the no-op, ${rounds} rounds`);
    const byWorkers = new Map<string, BenchServer>();
    for (const count of ['1', '2']) {
      const server = await startServe({ name: `serve WORKERS=${count}`, databaseUrl: database.url, workDir, env: { ...issuer.env, WORKERS: count } });
      running.push(server);
      byWorkers.set(count, server);
      await assertVerdict(server.name, server.grpcPort, credentials.requests.allow);
      await warm(server, allow, unpinned);
    }
    const workerRounds: Array<{ readonly byCount: ReadonlyMap<string, LoadRun>; readonly noop: LoadRun }> = [];
    const contenders = [...byWorkers.values(), noop];
    for (let round = 0; round < rounds; round++) {
      const runs = new Map<BenchServer, LoadRun>();
      // Each takes its turn first.
      for (let turn = 0; turn < contenders.length; turn++) {
        const server = contenders[(round + turn) % contenders.length]!;
        runs.set(server, await measureAlone(server, allow, unpinned));
      }
      workerRounds.push({ byCount: new Map([...byWorkers].map(([count, server]) => [count, runs.get(server)!])), noop: runs.get(noop)! });
    }
    remember(byWorkers.get('2')!, allow, unpinned);

    return {
      settings,
      cpuPlan: plan,
      databaseDescription: database.description,
      statementSource: database.statementSource,
      sites: BENCH_SITES,
      verification,
      saturationRounds,
      tokenRounds,
      latency: { ratePerSecond: ratePerConnection * SATURATION.connections, serve: latencyServe, noop: latencyNoop },
      openLoop: { ratePerSecond: openRate, serve: openServe, noop: openNoop },
      oneAtATime: { serve: singleServe, noop: singleNoop },
      wrongKeyRounds,
      denyMix: { rounds: denyMixRounds, files: mix.map((f) => f.request.name) },
      largeBody: { rounds: largeBodyRounds },
      workerRounds,
      commands: commands.map((command) => command.replaceAll(workDir, '$BENCH_DIR')),
    };
  } finally {
    for (const server of running.reverse()) await server.stop().catch(() => undefined);
    await fixture.close(log);
  }
}
