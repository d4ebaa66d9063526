import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/store/embedded-postgres.js';

describe('embedded PostgreSQL', () => {
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-embedded-'));
  });
  after(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps its data across restarts, is joined rather than started twice, and stops even after dying on its own', { timeout: 60_000 }, async () => {
    // A lock left with our own pid is a previous life of this process (a container's pid 1): stale.
    await writeFile(join(dataDir, 'sitekey-authz.lock'), `${process.pid}\n`);
    const first = await startEmbeddedPostgres({ dataDir, persistent: true });
    assert.equal(first.ownedByUs, true);
    const sql = new pg.Client({ connectionString: first.url });
    await sql.connect();
    await sql.query('CREATE TABLE kept (n int)');
    await sql.end();

    const joined = await startEmbeddedPostgres({ dataDir, persistent: true });
    assert.deepEqual([joined.ownedByUs, joined.url], [false, first.url]);

    // The server dies under us (an operator's pg_ctl stop, a crash): stop() must still return.
    const pidFile = join(dataDir, 'pg', 'postmaster.pid');
    const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
    process.kill(pid, 'SIGINT');
    for (let waited = 0; existsSync(pidFile) && waited < 20_000; waited += 50) await sleep(50);
    await first.stop();

    const again = await startEmbeddedPostgres({ dataDir, persistent: true });
    try {
      assert.equal(again.ownedByUs, true);
      const check = new pg.Client({ connectionString: again.url });
      await check.connect();
      const { rows } = await check.query("SELECT to_regclass('kept') IS NOT NULL AS kept");
      await check.end();
      assert.equal(rows[0].kept, true);
    } finally {
      await again.stop();
    }
  });

  it('says why the server did not start', { timeout: 60_000 }, async () => {
    await appendFile(join(dataDir, 'pg', 'postgresql.auto.conf'), "shared_buffers = 'plenty'\n");
    await assert.rejects(startEmbeddedPostgres({ dataDir, persistent: true }), /the embedded PostgreSQL in .* did not start: .*shared_buffers/);
    assert.equal(existsSync(join(dataDir, 'sitekey-authz.lock')), false, 'the lock outlived the failed start');
  });
});
