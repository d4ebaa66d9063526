import { podLimits } from '../test/deploy/pod-limits.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePorts } from '../src/embedded/embedded-postgres.js';
import { GRPC_LIMITS } from '../src/envoy/grpc-server.js';
import { loadConfig } from '../src/config.js';
import { partialMessages } from './abuse-attacks.js';
import { pipelinedMetrics, silentConnectionsOnThread, slowLoris, type Attack } from '../test/support/operator-attacks.js';
import { manyAddresses, notifyStorm, strangerLabels } from './abuse-store-rows.js';
import {
  CHECK_GOAL_MS,
  checksText,
  mib,
  probesText,
  rowLine,
  sampleOf,
  scrape,
  shareMet,
  startPacedChecks,
  startProbes,
  startRssPeak,
  summariseChecks,
  tableRow,
  withRss,
  type CheckSummary,
  type ProbeSummary,
  type Row,
  type RssPeak,
} from './abuse-watch.js';
import { adminJunkTokens, adminLoris, signInFlood, startIssuedServe, type IssuedServe } from './abuse-admin.js';
import { forgedTokens } from './abuse-tokens.js';
import { workerReplaced } from './abuse-workers.js';
import { BenchIssuer } from './bench-issuer.js';
import { assertVerdict } from './verify-once.js';
import { openBenchDatabase } from './bench-database.js';
import { BENCH_CLIENT_IP, encodeCheckRequest, partnerBody, tokenRequestBody, type BenchRequest } from './check-requests.js';
import { seedPartnerAmongFillers } from './filler-sites.js';
import { startServe, type BenchServer } from './server-process.js';
import { wordsSetting } from './settings.js';

/**
 * The attacks `serve` must survive, on a real `serve` holding 100,000 sites, at the sizes they were
 * first measured at, one line each: what was measured, the goal, met or NOT met. Checks are paced from another process (one
 * every 50 ms, open-loop, timed from when each was due), /healthz is probed every 100 ms with a 2 s
 * time-out, RSS is read from /proc. The resync row and the deny-heavy mix are measured by
 * resync-stall.ts and serve-bench.ts. A row that cannot run says why.
 */
const SITES = 100_000;
const PARTNER_SITE = String(SITES + 1);
/** A filler site refused from many addresses: outside 1…STRANGER_SITES, which the stranger row names. */
const REFUSED_SITE = '50000';
const STRANGER_SITES = 5_000;
const REFUSED_ADDRESSES = 25_000;
const ATTACK_MS = 10_000;
/** Probes and checks go on after an attack: an unbounded operator port once stayed silent for 38–53 s after a flood. */
const AFTER_MS = 3_000;

/** ABUSE_ROWS=flood,workers runs only those rows (the names of ROWS); ABUSE_KEEP_LOGS=1 keeps serve's logs. */
const ROWS = ['flood', 'loris', 'silent', 'partial', 'notify', 'addresses', 'labels', 'forged-tokens', 'admin-junk-tokens', 'admin-loris', 'sign-in-flood', 'workers'] as const;
/** The rows measured on a serve with partner tokens and the admin port on. */
const ISSUED_ROWS: ReadonlyArray<(typeof ROWS)[number]> = ['forged-tokens', 'admin-junk-tokens', 'admin-loris', 'sign-in-flood'];
/** The partner's OAuth client, registered to PARTNER_SITE for the forged-token row. */
const TOKEN_CLIENT = 'abuse-partner';
/** Forged partner tokens a second in the forged-token row, and junk admin tokens a second (half `x1`, `x2`, …). */
const FORGED_PER_SECOND = 3_000;
const JUNK_PER_SECOND = 180;
/** Where the strangers of the silent and admin rows connect from: another address than the probes' and staff's, as a stranger's pod is not the kubelet. */
const STRANGER_ADDRESS = '127.0.0.2';
/** The source address of the forged-token row's checks, as Envoy reports the peer: not the paced checks' BENCH_CLIENT_IP. */
const FLOOD_ADDRESS = '203.0.113.66';
const chosen = new Set((process.env.ABUSE_ROWS || ROWS.join(',')).split(','));
for (const name of chosen) {
  if (!(ROWS as readonly string[]).includes(name)) {
    console.error(`ABUSE_ROWS: no row "${name}"; the rows are ${ROWS.join(', ')}`);
    process.exit(2);
  }
}
const keepLogs = process.env.ABUSE_KEEP_LOGS === '1';
/**
 * Node's options for serve: the pod's (NODE_OPTIONS in deploy/kubernetes/base/deployment.yaml), or
 * ABUSE_SERVE_NODE_ARGS='--max-old-space-size=384' to try others without a rebuild.
 */
const serveNodeArguments = wordsSetting('ABUSE_SERVE_NODE_ARGS') ?? podLimits().nodeOptions;

const lines: string[] = [];
let unmeasured = 0;

async function row(name: (typeof ROWS)[number], what: string, measure: () => Promise<Row | Row[]>): Promise<void> {
  if (!chosen.has(name)) return;
  try {
    const result = await measure();
    for (const line of (Array.isArray(result) ? result : [result]).map(rowLine)) {
      lines.push(line);
      console.log(line);
    }
  } catch (error) {
    unmeasured += 1;
    const line = `${what}: not measured: ${error instanceof Error ? error.message : String(error)}`;
    lines.push(line);
    console.log(line);
  }
}

interface Watched {
  readonly checks: CheckSummary;
  readonly probes: ProbeSummary;
  readonly rss: RssPeak;
  readonly attack: string;
}

/** Paced checks, probes (of `healthzUrl`, by default on the metrics port) and RSS around an attack that runs `attackMs`, and AFTER_MS beyond. */
async function watched(serve: BenchServer, message: Buffer, start: () => Attack, attackMs = ATTACK_MS, healthzUrl = serve.metricsUrl!.replace(/\/metrics$/, '/healthz')): Promise<Watched> {
  const rss = startRssPeak(serve);
  const checks = startPacedChecks(serve.grpcPort, message);
  await sleep(500);
  const probes = startProbes(healthzUrl);
  const from = performance.now();
  const attack = start();
  await sleep(attackMs);
  const described = attack.describe();
  attack.stop();
  await sleep(AFTER_MS);
  const probed = await probes.stop();
  const until = performance.now();
  const calls = await checks.stop();
  return { checks: summariseChecks(calls, from, until), probes: probed, rss: await rss.stop(), attack: described };
}

/** A row measured by `measure` on serve, with serve's peak RSS meanwhile added to it and to its goal. */
async function rssWatched(serve: BenchServer, measure: () => Promise<Row>): Promise<Row> {
  const rss = startRssPeak(serve);
  const measured = await measure().catch(async (error: unknown) => {
    await rss.stop();
    throw error;
  });
  return withRss(measured, await rss.stop());
}

const workDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-abuse-'));
const database = await openBenchDatabase(process.env.DATABASE_URL || undefined);
const pool = new pg.Pool({ connectionString: database.url, max: 2 });
pool.on('error', () => undefined);
const startedAt = performance.now();
try {
  const seeded = performance.now();
  const { key } = await seedPartnerAmongFillers(pool, SITES);
  console.log(`${database.description}; serve's Node options: ${serveNodeArguments.join(' ') || 'none'}; seeded ${(SITES + 1).toLocaleString('en')} sites in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);
  const partner = { authorization: `${PARTNER_SITE}:${key}`, body: partnerBody(PARTNER_SITE, key), ip: BENCH_CLIENT_IP };
  const message = encodeCheckRequest(partner);

  // Refusal counts flushed every 2 s, so the many-addresses row reads them soon; no periodic resync
  // during the run, so that the storm row counts only the reloads notifications caused. PROBE_PORT
  // as the Deployment sets it, for the silent row's probes.
  const [probePort = 0] = await freePorts(1);
  const serve = await startServe({
    name: 'serve-abuse',
    databaseUrl: database.url,
    workDir,
    env: { LOG_LEVEL: 'warn', LAST_USED_FLUSH_SECONDS: '2', SNAPSHOT_REFRESH_SECONDS: '600', PROBE_PORT: String(probePort) },
    nodeArguments: serveNodeArguments,
  });
  try {
    console.log(`serve ready with ${SITES.toLocaleString('en')} sites, RSS ${mib(serve.memory().rssBytes)}`);
    {
      // The same watch with no attack: what the machine itself costs the paced checks and probes.
      const seen = await watched(serve, message, () => ({ describe: () => 'no attack', stop: () => undefined }), 5_000);
      const [heap] = await serve.probe();
      const memory = heap === undefined ? '' : ` (V8 heap ${mib(heap.heapUsedBytes)}, buffers outside it ${mib(heap.externalBytes)})`;
      console.log(`baseline, no attack, 8 s: ${checksText(seen.checks)}; ${probesText(seen.probes)}; peak RSS ${mib(seen.rss.peakBytes)}${memory}`);
    }
    await row('flood', 'pipelined GET /metrics', async () => {
      const seen = await watched(serve, message, () => pipelinedMetrics(serve.metricsUrl!, 32, 2_000));
      const measured = tableRow(
        'pipelined GET /metrics, 32 connections × 2,000 requests',
        `${checksText(seen.checks)}; ${probesText(seen.probes)}; ${seen.attack}`,
        `≥ 90 % of checks within ${CHECK_GOAL_MS} ms, never 3 failed probes in a row`,
        shareMet(seen.checks) && seen.probes.longestFailureRun < 3,
      );
      return withRss(measured, seen.rss);
    });
    await row('loris', 'slow-loris on the metrics port', async () => {
      const seen = await watched(serve, message, () => slowLoris(serve.metricsUrl!, 256));
      const measured = tableRow(
        'slow-loris on the metrics port, 256 connections dripping headers, reconnecting',
        `${probesText(seen.probes)}; ${checksText(seen.checks)}; ${seen.attack}`,
        'never 3 failed probes in a row',
        seen.probes.longestFailureRun < 3,
      );
      return withRss(measured, seen.rss);
    });
    await row('silent', 'silent connections on the metrics port', async () => {
      const seen = await watched(serve, message, () => silentConnectionsOnThread(serve.metricsUrl!, 800, STRANGER_ADDRESS), ATTACK_MS, `http://127.0.0.1:${probePort}/healthz`);
      const measured = tableRow(
        `silent connections on the metrics port, 800 new a second from ${STRANGER_ADDRESS}, each held until serve closes it; kubelet's probes on PROBE_PORT`,
        `${probesText(seen.probes)}; ${checksText(seen.checks)}; ${seen.attack}`,
        `never 3 failed probes in a row, ≥ 90 % of checks within ${CHECK_GOAL_MS} ms`,
        shareMet(seen.checks) && seen.probes.longestFailureRun < 3,
      );
      return withRss(measured, seen.rss);
    });
    await row('partial', 'partial gRPC messages', async () => {
      const maxBodyBytes = loadConfig({}).maxBodyBytes;
      const largest = maxBodyBytes + GRPC_LIMITS.messageHeadroomBytes;
      const rows: Row[] = [];
      for (const connections of [5, 10]) {
        const resetBefore = sampleOf(await scrape(serve), 'sitekey_authz_grpc_incomplete_requests_reset_total');
        const seen = await watched(serve, message, () => partialMessages(`127.0.0.1:${serve.grpcPort}`, connections, GRPC_LIMITS.maxConcurrentStreams, largest, maxBodyBytes), 8_000);
        const resets = sampleOf(await scrape(serve), 'sitekey_authz_grpc_incomplete_requests_reset_total') - resetBefore;
        const measured = tableRow(
          `partial gRPC messages that never complete, ${connections} connections`,
          `${resets} incomplete requests reset for the budget (${mib(GRPC_LIMITS.incompleteRequestBytesBudget)}); ${checksText(seen.checks)}; ${seen.attack}`,
          'a total budget for bytes held',
          resets > 0,
        );
        rows.push(withRss(measured, seen.rss));
      }
      return rows;
    });
    await row('notify', 'NOTIFY storm', () => rssWatched(serve, () => notifyStorm(pool, database.url, serve, message)));
    await row('addresses', 'many source addresses', () => rssWatched(serve, () => manyAddresses(pool, serve, REFUSED_SITE, REFUSED_ADDRESSES)));
    await row('labels', 'stranger labels', () => rssWatched(serve, () => strangerLabels(serve, STRANGER_SITES, PARTNER_SITE)));
  } finally {
    await serve.stop();
  }

  if (ISSUED_ROWS.some((name) => chosen.has(name))) {
    const issuer = await BenchIssuer.start();
    // Started for the first of these rows that runs; a serve that cannot start leaves each of them "not measured" with the reason.
    let starting: Promise<IssuedServe> | undefined;
    const issued = () => (starting ??= startIssuedServe({ databaseUrl: database.url, workDir, nodeArguments: serveNodeArguments, issuer, siteId: PARTNER_SITE, clientId: TOKEN_CLIENT }));
    try {
      await row('forged-tokens', 'forged partner tokens', async () => {
        const { serve } = await issued();
        const token: BenchRequest = { name: 'known token', expected: 'allow', message: encodeCheckRequest({ authorization: `Bearer ${await issuer.mint(TOKEN_CLIENT)}`, body: tokenRequestBody() }) };
        // Verified once here, as a partner's first request does: from then on a token serve knows.
        await assertVerdict(serve.name, serve.grpcPort, token);
        return forgedTokens(serve, issuer, TOKEN_CLIENT, { key: message, token: token.message }, { perSecond: FORGED_PER_SECOND, floodAddress: FLOOD_ADDRESS, attackMs: ATTACK_MS, afterMs: AFTER_MS });
      });
      await row('admin-junk-tokens', 'junk tokens at the admin port', async () => rssWatched((await issued()).serve, async () => adminJunkTokens(await issued(), STRANGER_ADDRESS, JUNK_PER_SECOND, 24)));
      await row('admin-loris', 'slow-loris on the admin port', async () => rssWatched((await issued()).serve, async () => adminLoris(await issued(), STRANGER_ADDRESS, 300, 24)));
      await row('sign-in-flood', 'console sign-in flood', async () => rssWatched((await issued()).serve, async () => signInFlood(await issued(), pool, STRANGER_ADDRESS, ATTACK_MS)));
    } finally {
      await starting?.then((started) => started.close(), () => undefined);
      await issuer.close();
    }
  }

  await row('workers', 'WORKERS=2, a worker replaced', async () => {
    const workers = await startServe({ name: 'serve-abuse-workers', databaseUrl: database.url, workDir, env: { LOG_LEVEL: 'warn', WORKERS: '2' }, nodeArguments: serveNodeArguments });
    try {
      return await workerReplaced(workers, partner, 640);
    } finally {
      await workers.stop();
    }
  });
} finally {
  await pool.end();
  await database.close();
  if (keepLogs) console.log(`serve's logs are in ${workDir}`);
  else await rm(workDir, { recursive: true, force: true });
}
console.log(`\n${lines.length} rows in ${((performance.now() - startedAt) / 1000).toFixed(0)} s: ${lines.filter((line) => line.endsWith('| met')).length} met, ${lines.filter((line) => line.endsWith('NOT met')).length} NOT met, ${unmeasured} not measured`);
process.exitCode = unmeasured > 0 ? 1 : 0;
