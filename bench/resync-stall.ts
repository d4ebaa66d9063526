import * as grpc from '@grpc/grpc-js';
import { copyFileSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openBenchDatabase } from './bench-database.js';
import { decodeCheckResponse, encodeCheckRequest, grpcFrame, partnerBody } from './check-requests.js';
import type { ProbeReport } from './heap-probe.js';
import { ensureH2load, h2loadArguments, latencyFromLog, runH2load, type LatencySummary } from './h2load.js';
import { seedPartnerAmongFillers } from './filler-sites.js';
import { podLimits } from '../test/deploy/pod-limits.js';
import { startNoop, startServe, type BenchServer } from './server-process.js';
import { SiteDigests } from '../src/store/site-digests.js';
import { Slices } from '../src/common/slices.js';
import { resyncSites } from '../src/store/snapshot-resync.js';
import { positiveIntegerSetting, wordsSetting } from './settings.js';

const SITES = 100_000;
const PARTNER_SITE = String(SITES + 1);
/** The resync interval of this run: several full resyncs fall in the measured window. */
const REFRESH_SECONDS = 2;
/** Every few seconds this many sites change (through their triggers, as the CLI would change them). */
const CHANGED_SITES = 1_000;
const CHANGE_EVERY_MS = 5_000;
/** The goal: no check slower than this while resyncs run. */
const SLOWEST_GOAL_MS = 20;

/** The resolution prom-client samples the event loop at: every sample it takes includes it. */
const LOOP_SAMPLE_MS = 10;

/**
 * How long serve's event loop was held up since the previous scrape (prom-client's default metrics),
 * and how many syncs it has done: the run must hold several full resyncs and per-site reloads.
 */
async function serveState(metricsUrl: string | undefined): Promise<{ p99Ms: number; longestMs: number; fullSyncs: number; siteSyncs: number; sitesReadByResyncs: number }> {
  if (metricsUrl === undefined) throw new Error('serve has no metrics URL');
  const text = await (await fetch(metricsUrl)).text();
  const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  const heldUp = (name: string) => Math.max(0, value(name) * 1000 - LOOP_SAMPLE_MS);
  return {
    p99Ms: heldUp('nodejs_eventloop_lag_p99_seconds'),
    longestMs: heldUp('nodejs_eventloop_lag_max_seconds'),
    fullSyncs: value('sitekey_authz_snapshot_syncs_total{kind="full"}'),
    siteSyncs: value('sitekey_authz_snapshot_syncs_total{kind="sites"}'),
    // Absent before the resync counted them: NaN then, printed as such.
    sitesReadByResyncs: value('sitekey_authz_snapshot_sites_read_total{kind="full"}'),
  };
}

/** One check at a time on one connection for `seconds`, from h2load (C, no garbage collector, so that a pause of the client is not counted as the server's). */
async function checksOneAtATime(port: number, requestFile: string, logFile: string): Promise<LatencySummary & { over: number }> {
  await runH2load(h2loadArguments(port, requestFile, { connections: 1, streams: 1, seconds, logFile }));
  const checks = latencyFromLog(logFile);
  if (checks.failedStreams > 0) throw new Error(`${checks.failedStreams} checks failed during the resync run`);
  return { ...checks, over: countOver(logFile, SLOWEST_GOAL_MS * 1000) };
}

function latencyLine(checks: LatencySummary & { over: number }): string {
  return (
    `${checks.requests} checks, median ${ms(checks.p50Micros)} ms, p99 ${ms(checks.p99Micros)} ms, ` +
    `p99.9 ${ms(checks.p999Micros)} ms, slowest ${ms(checks.maxMicros)} ms (goal < ${SLOWEST_GOAL_MS} ms: ${checks.over === 0 ? 'met' : `${checks.over} over`})`
  );
}

/** Checks in an h2load --log-file that took `micros` or longer. */
function countOver(logFile: string, micros: number): number {
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => Number(line.split('\t')[2]) >= micros).length;
}

const ms = (micros: number) => (micros / 1000).toFixed(2);

/** What the server (`who`) allocated and collected during the run, and its longest collection: whether a slow check was a GC pause. */
function gcSummary(who: string, before: ProbeReport, after: ProbeReport): string {
  const allocatedMiB = (after.allocatedBytes - before.allocatedBytes) / 2 ** 20;
  return (
    `${who} allocated ${allocatedMiB.toFixed(0)} MiB, ${after.collections - before.collections} collections, ${ms(after.gcMicros - before.gcMicros)} ms in GC, ` +
    `longest ${ms(after.longestGcMicros)} ms (${after.longestGcType || 'none'})`
  );
}

/** `work` every `everyMs`, each after the one before has ended (a failure is printed), until stop(), which waits for the last. */
function repeatedEvery(everyMs: number, what: string, work: () => Promise<unknown>): { stop(): Promise<void> } {
  let last = Promise.resolve();
  const timer = setInterval(() => {
    last = last.then(work).then(
      () => undefined,
      (error: unknown) => console.error(`${what} failed: ${String(error)}`),
    );
  }, everyMs);
  return {
    stop: async () => {
      clearInterval(timer);
      await last;
    },
  };
}

/** CHANGED_SITES sites changed every `everyMs` (through their triggers, as the CLI would change them), until stop(). */
function changeSitesEvery(pool: pg.Pool, everyMs: number): { stop(): Promise<void> } {
  let changes = 0;
  return repeatedEvery(everyMs, 'changing sites', () => {
    const from = 1 + ((changes++ * CHANGED_SITES) % (SITES - CHANGED_SITES));
    return pool.query('UPDATE sites SET enabled = NOT enabled WHERE id BETWEEN $1 AND $2', [from, from + CHANGED_SITES - 1]);
  });
}

/**
 * What serve's resyncs ask of PostgreSQL, asked from here every REFRESH_SECONDS until stop(), one at a
 * time as serve's are: the floor is measured beside the same database work on the same cores as serve
 * was (a resync of 100,000 unchanged sites keeps PostgreSQL busy ~0.2 s on this machine).
 */
async function resyncingBeside(pool: pg.Pool): Promise<{ stop(): Promise<void> }> {
  const digests = new SiteDigests();
  const resyncOnce = async () => digests.takeResync(await resyncSites(pool, digests), new Slices());
  await resyncOnce();
  return repeatedEvery(REFRESH_SECONDS * 1000, "the floor's resync", resyncOnce);
}

/** h2load sees HTTP statuses only: the verdict on these exact bytes is checked here, once; then serve warms up. */
async function verifyAndWarmUp(port: number, message: Buffer): Promise<void> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const call = () =>
    new Promise<Buffer>((resolveCall, reject) =>
      client.makeUnaryRequest('/envoy.service.auth.v3.Authorization/Check', (b: Buffer) => b, (b: Buffer) => b, message, { deadline: Date.now() + 10_000 }, (error, answer) =>
        error || answer === undefined ? reject(error ?? new Error('no answer')) : resolveCall(answer),
      ),
    );
  try {
    const verdict = decodeCheckResponse(await call()) as { status?: { code?: number } };
    if ((verdict.status?.code ?? 0) !== 0) throw new Error(`the partner's check is not allowed: ${JSON.stringify(verdict.status)}`);
    for (let i = 0; i < 200; i++) await call();
  } finally {
    client.close();
  }
}

type Checks = LatencySummary & { over: number };

async function measureServe(serve: BenchServer, requestFile: string): Promise<Checks> {
  // prom-client's event-loop gauges cover the time since the last scrape: this one starts the window.
  const before = await serveState(serve.metricsUrl);
  const [probeBefore] = await serve.probe();
  const checks = await checksOneAtATime(serve.grpcPort, requestFile, join(workDir, 'resync-checks.log'));
  const loop = await serveState(serve.metricsUrl);
  const [probeAfter] = await serve.probe();
  const [fullSyncs, siteSyncs] = [loop.fullSyncs - before.fullSyncs, loop.siteSyncs - before.siteSyncs];
  if (!(fullSyncs > 0 && siteSyncs > 0)) throw new Error(`the run held ${fullSyncs} full resyncs and ${siteSyncs} per-site reloads: it measured nothing`);
  console.log(
    `100,000-site resync every ${REFRESH_SECONDS} s, ${CHANGED_SITES} sites changed every ${CHANGE_EVERY_MS / 1000} s, one check at a time for ${seconds} s (h2load -c1 -m1) ` +
      `through ${fullSyncs} full resyncs (which read ${loop.sitesReadByResyncs - before.sitesReadByResyncs} sites again) and ${siteSyncs} reloads of changed sites: ` +
      `${latencyLine(checks)}; ` +
      `RSS ${(serve.memory().rssBytes / 2 ** 20).toFixed(0)} MiB; serve's event loop held up at most ${loop.longestMs.toFixed(1)} ms (p99 ${loop.p99Ms.toFixed(1)} ms)` +
      (probeBefore && probeAfter ? `; ${gcSummary('serve', probeBefore, probeAfter)}` : ''),
  );
  return checks;
}

/**
 * A floor, `what` it is, under the same load as serve while the same sites change and PostgreSQL computes
 * the same resyncs; its checks logged to `logName` (h2load adds to a log file that is there already).
 */
async function measureFloor(floor: BenchServer, what: string, requestFile: string, pool: pg.Pool, logName: string): Promise<Checks> {
  const database = await resyncingBeside(pool);
  const [probeBefore] = await floor.probe();
  const checks = await checksOneAtATime(floor.grpcPort, requestFile, join(workDir, logName)).finally(() => database.stop());
  const [probeAfter] = await floor.probe();
  console.log(
    `${what}, under the same load while the same sites change and PostgreSQL digests them for a resync every ${REFRESH_SECONDS} s: ` +
      `${latencyLine(checks)}; RSS ${(floor.memory().rssBytes / 2 ** 20).toFixed(0)} MiB` +
      (probeBefore && probeAfter ? `; ${gcSummary('it', probeBefore, probeAfter)}` : ''),
  );
  return checks;
}

/** The need this run measures: serve's tail while it resyncs, as a ratio to the floor holding the same sites in the same run. */
function tailRatioLine(serve: Checks, floor: Checks): string {
  const ratio = (pick: (checks: Checks) => number) => `${(pick(serve) / pick(floor)).toFixed(2)}×`;
  return (
    `the tail during full resyncs, serve / the no-op holding the same sites: p99 ${ratio((c) => c.p99Micros)}, ` +
    `p99.9 ${ratio((c) => c.p999Micros)}, slowest ${ratio((c) => c.maxMicros)}`
  );
}

/**
 * Issue 20's scale row: `serve` with 100,000 sites resyncing every REFRESH_SECONDS while 1,000 sites
 * change every 5 s, and one check at a time for RESYNC_SECONDS (20) on one connection: median,
 * p99.9 and the slowest check. Uses DATABASE_URL's server when set (its user needs CREATEDB).
 * The checks come from h2load (installed when missing, as for make bench); serve's own event-loop
 * delay beside them tells what of a slow check was serve's and what the machine's. Then the floor,
 * under the same load while the same sites change and PostgreSQL computes the same resync digests: the
 * no-op Check server holding the same 100,000 sites (loaded as serve loads them, never resynced nor
 * read), so that what holding the snapshot costs in collections reads apart from what resyncing it adds;
 * and the empty floor, the same no-op holding nothing: what the machine, the load beside it and the gRPC
 * stack's own collections leave of the goal for any process. Its last line is the need docs/performance.md
 * names: serve's tail as a ratio to the floor holding the same sites. Its first, serve's start-up: from
 * its exec to /readyz answering 200 with the 100,001 sites loaded.
 */
const seconds = positiveIntegerSetting('RESYNC_SECONDS', 20, 'seconds');
/** Node options after the pod's, to look inside serve (`--trace-gc`, `--cpu-prof --cpu-prof-dir=…`) or to try other heap bounds. */
const extraNodeArguments = wordsSetting('RESYNC_NODE_ARGS') ?? [];
/** Where to keep serve's log (what --trace-gc prints goes there), which the run's directory otherwise takes with it. */
const keepLogAs = process.env.RESYNC_SERVE_LOG || undefined;
ensureH2load();
const workDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-resync-'));
const database = await openBenchDatabase(process.env.DATABASE_URL || undefined);
const pool = new pg.Pool({ connectionString: database.url, max: 2 });
pool.on('error', () => undefined);
try {
  const seeded = performance.now();
  const { key } = await seedPartnerAmongFillers(pool, SITES);
  console.log(`seeded ${(SITES + 1).toLocaleString('en')} sites in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);

  // As in its pod: the Deployment's NODE_OPTIONS (V8's heap bound).
  const nodeArguments = [...podLimits().nodeOptions, ...extraNodeArguments];
  const serve = await startServe({ name: 'serve-resync', databaseUrl: database.url, workDir, nodeArguments, env: { SNAPSHOT_REFRESH_SECONDS: String(REFRESH_SECONDS), LOG_LEVEL: 'warn' } });
  console.log(
    `start-up with ${(SITES + 1).toLocaleString('en')} sites: serve answered /readyz 200 ${(serve.startupMs / 1000).toFixed(2)} s after its exec ` +
      `(node ${nodeArguments.join(' ')}; RSS then ${(serve.memory().rssBytes / 2 ** 20).toFixed(0)} MiB)`,
  );
  const message = encodeCheckRequest({ authorization: `${PARTNER_SITE}:${key}`, body: partnerBody(PARTNER_SITE, key) });
  const requestFile = join(workDir, 'check.bin');
  await writeFile(requestFile, grpcFrame(message));
  const changer = changeSitesEvery(pool, CHANGE_EVERY_MS);
  try {
    let serveChecks: Checks;
    try {
      await verifyAndWarmUp(serve.grpcPort, message);
      serveChecks = await measureServe(serve, requestFile);
    } finally {
      await serve.stop();
      if (keepLogAs !== undefined) copyFileSync(join(workDir, 'serve-resync.log'), keepLogAs);
    }
    const keyId = (await pool.query<{ id: string }>('SELECT id::text AS id FROM api_keys WHERE site_id = $1', [PARTNER_SITE])).rows[0]!.id;
    const floorChecks: Checks[] = [];
    const floors = [
      [`the floor: the no-op holding the same ${(SITES + 1).toLocaleString('en')} sites (loaded as serve loads them, then never read nor resynced)`, database.url, 'floor-checks.log'],
      ['the empty floor: the no-op holding no site (what this machine and the gRPC stack allow a process that holds nothing)', undefined, 'empty-floor-checks.log'],
    ] as const;
    for (const [what, holdSnapshotOf, logName] of floors) {
      const floor = await startNoop({ workDir, siteId: PARTNER_SITE, keyId, nodeArguments, ...(holdSnapshotOf && { holdSnapshotOf }) });
      try {
        floorChecks.push(await measureFloor(floor, what, requestFile, pool, logName));
      } finally {
        await floor.stop();
      }
    }
    console.log(tailRatioLine(serveChecks, floorChecks[0]!));
  } finally {
    await changer.stop();
  }
} finally {
  await pool.end();
  await database.close();
  await rm(workDir, { recursive: true, force: true });
}
