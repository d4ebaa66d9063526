import * as grpc from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { canonicalApiKey, hashApiKey } from '../src/decision/api-key.js';
import { openBenchDatabase } from './bench-database.js';
import { BENCH_CLIENT_IP, encodeCheckRequest, partnerBody } from './check-requests.js';
import { seedFillerSites } from './filler-sites.js';
import { percentile } from './open-loop.js';
import { startServe } from './server-process.js';
import { positiveIntegerSetting } from './settings.js';

const SITES = 100_000;
const PARTNER_SITE = String(SITES + 1);
/** The resync interval of this run: several full resyncs fall in the measured window. */
const REFRESH_SECONDS = 2;
/** Every few seconds this many sites change (through their triggers, as the CLI would change them). */
const CHANGED_SITES = 1_000;
const CHANGE_EVERY_MS = 5_000;
/** The goal: no check slower than this while resyncs run. */
const SLOWEST_GOAL_MS = 20;

/**
 * Issue 20's scale row: `serve` with 100,000 sites resyncing every REFRESH_SECONDS while 1,000 sites
 * change every 5 s, and one check at a time for RESYNC_SECONDS (20) on one connection: median,
 * p99.9 and the slowest check. Uses DATABASE_URL's server when set (its user needs CREATEDB).
 * RESYNC_TRACE=1 prints each check over 10 ms with when it came, to see whether they follow the resyncs.
 */
const seconds = positiveIntegerSetting('RESYNC_SECONDS', 20, 'seconds');
const workDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-resync-'));
const database = await openBenchDatabase(process.env.DATABASE_URL || undefined);
const pool = new pg.Pool({ connectionString: database.url, max: 2 });
pool.on('error', () => undefined);
try {
  const seeded = performance.now();
  await seedFillerSites(pool, SITES);
  const key = canonicalApiKey(randomUUID())!;
  await pool.query('INSERT INTO sites (id, name) VALUES ($1, $2)', [PARTNER_SITE, 'bench partner']);
  await pool.query('INSERT INTO api_keys (site_id, key_sha256, last_five) VALUES ($1, $2, $3)', [PARTNER_SITE, Buffer.from(hashApiKey(key), 'hex'), key.slice(-5)]);
  await pool.query('INSERT INTO allowlist_entries (site_id, cidr) VALUES ($1, $2)', [PARTNER_SITE, `${BENCH_CLIENT_IP}/32`]);
  console.log(`seeded ${(SITES + 1).toLocaleString('en')} sites in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);

  const serve = await startServe({ name: 'serve-resync', databaseUrl: database.url, workDir, env: { SNAPSHOT_REFRESH_SECONDS: String(REFRESH_SECONDS), LOG_LEVEL: 'warn' } });
  const client = new grpc.Client(`127.0.0.1:${serve.grpcPort}`, grpc.credentials.createInsecure());
  const message = encodeCheckRequest({ authorization: `${PARTNER_SITE}:${key}`, body: partnerBody(PARTNER_SITE, key) });
  const call = () =>
    new Promise<void>((resolveCall, reject) =>
      client.makeUnaryRequest('/envoy.service.auth.v3.Authorization/Check', (b: Buffer) => b, (b: Buffer) => b, message, { deadline: Date.now() + 10_000 }, (error) =>
        error ? reject(error) : resolveCall(),
      ),
    );
  try {
    for (let i = 0; i < 200; i++) await call();
    let changes = 0;
    let changing = Promise.resolve();
    const changer = setInterval(() => {
      const from = 1 + ((changes++ * CHANGED_SITES) % (SITES - CHANGED_SITES));
      changing = pool
        .query('UPDATE sites SET enabled = NOT enabled WHERE id BETWEEN $1 AND $2', [from, from + CHANGED_SITES - 1])
        .then(() => undefined, (error: unknown) => console.error(`changing sites failed: ${String(error)}`));
    }, CHANGE_EVERY_MS);
    const latencies: number[] = [];
    const until = performance.now() + seconds * 1000;
    while (performance.now() < until) {
      const started = performance.now();
      await call();
      latencies.push(performance.now() - started);
      if (process.env.RESYNC_TRACE && performance.now() - started > 10) console.log(`slow ${(performance.now() - started).toFixed(1)} ms at ${((until - seconds * 1000 - started) / -1000).toFixed(2)} s`);
    }
    clearInterval(changer);
    await changing;
    const sorted = Float64Array.from(latencies).sort();
    const slowest = sorted[sorted.length - 1] ?? Number.NaN;
    const over = latencies.filter((ms) => ms >= SLOWEST_GOAL_MS).length;
    console.log(
      `100,000-site resync every ${REFRESH_SECONDS} s, ${CHANGED_SITES} sites changed every ${CHANGE_EVERY_MS / 1000} s, one check at a time for ${seconds} s: ` +
        `${latencies.length} checks, median ${percentile(sorted, 0.5).toFixed(2)} ms, p99 ${percentile(sorted, 0.99).toFixed(2)} ms, ` +
        `p99.9 ${percentile(sorted, 0.999).toFixed(2)} ms, slowest ${slowest.toFixed(1)} ms (goal < ${SLOWEST_GOAL_MS} ms: ${over === 0 ? 'met' : `${over} over`}); ` +
        `RSS ${(serve.memory().rssBytes / 2 ** 20).toFixed(0)} MiB`,
    );
  } finally {
    client.close();
    await serve.stop();
  }
} finally {
  await pool.end();
  await database.close();
  await rm(workDir, { recursive: true, force: true });
}
