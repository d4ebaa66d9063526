import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedServer } from '../src/embedded/embedded-postgres.js';
import { migrate } from '../src/store/migrate.js';
import { loadAllSites } from '../src/store/snapshot-loader.js';
import { seedFillerSites } from './filler-sites.js';

const SITES = 100_000;

const MIB = 1024 * 1024;

/** V8's heap, the buffers outside it (where the snapshot's records are) and the resident memory, after a full collection. */
function memoryMiB(): { heap: number; outside: number; rss: number } {
  globalThis.gc?.();
  const { heapUsed, arrayBuffers, rss } = process.memoryUsage();
  return { heap: heapUsed / MIB, outside: arrayBuffers / MIB, rss: rss / MIB };
}

/**
 * Issue #4's scale target: a snapshot of 100,000 sites with 2 keys and 3 CIDRs each loads in a few
 * seconds and holds in well under 300 MB; the records are outside V8's heap, and both are reported.
 * Uses TEST_DATABASE_URL's server when set.
 */
export async function runSnapshotLoadBench(): Promise<void> {
  assert.ok(globalThis.gc, 'run with node --expose-gc so heap figures are measured after collection');
  let server: EmbeddedServer | undefined;
  let dataDir: string | undefined;
  let serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) {
    dataDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-bench-'));
    server = await startEmbeddedPostgres({ dataDir, persistent: false });
    serverUrl = server.url;
  }
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  const database = `bench_${process.pid}`;
  await admin.query(`CREATE DATABASE ${database}`);
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
  // DROP DATABASE … WITH (FORCE) at the end may still find a closing connection; that is expected.
  pool.on('error', () => undefined);
  try {
    await migrate(url.toString());
    const seeded = performance.now();
    await seedFillerSites(pool, SITES);
    console.log(`seeded ${SITES.toLocaleString('en')} sites, ${(2 * SITES).toLocaleString('en')} keys, ` +
      `${(3 * SITES).toLocaleString('en')} CIDRs in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);

    const before = memoryMiB();
    // The load yields to the event loop as it builds: sampled meanwhile, the heap shows the rows the load
    // holds at once on top of the snapshot (what a serve pod must have room for).
    let peakBytes = 0;
    const sampler = setInterval(() => (peakBytes = Math.max(peakBytes, process.memoryUsage().heapUsed)), 5);
    const started = performance.now();
    const sites = await loadAllSites(pool);
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    const after = memoryMiB();
    assert.equal(sites.size, SITES);
    assert.equal(sites.get('4242')?.keysByHash.size, 2);
    console.log(`full snapshot load: ${seconds.toFixed(2)} s; held by the snapshot: ${(after.heap - before.heap).toFixed(0)} MiB of heap and ` +
      `${(after.outside - before.outside).toFixed(0)} MiB of buffers outside it (records ${(sites.bytesHeld / MIB).toFixed(0)} MiB); heap at most ` +
      `${(peakBytes / MIB - before.heap).toFixed(0)} MiB more during the load (rss ${(process.memoryUsage().rss / MIB).toFixed(0)} MiB)`);
    // What a pod needs per site it holds: the snapshot itself, and the resident memory the load left behind.
    const perThousand = (mib: number) => `${((mib * 1000) / SITES).toFixed(2)} MiB`;
    console.log(`memory per 1,000 sites: ${perThousand(after.heap - before.heap + after.outside - before.outside)} held by the snapshot (heap and buffers), ` +
      `${perThousand(after.rss - before.rss)} of RSS grown by the load`);
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
    await server?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runSnapshotLoadBench();
