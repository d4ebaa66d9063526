import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { appendFile, chmod, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { EmbeddedPostgresError, startEmbeddedPostgres } from '../../../src/embedded/embedded-postgres.js';

async function holdsTable(url: string, table: string): Promise<boolean> {
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    const { rows } = await sql.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [table]);
    return rows[0]?.present === true;
  } finally {
    await sql.end();
  }
}

describe('embedded PostgreSQL', { timeout: 120_000 }, () => {
  let parent: string;
  before(async () => {
    // As root, PostgreSQL runs as another OS user, which cannot enter a mode-700 folder of root's.
    parent = await mkdtemp(join(tmpdir(), 'sitekey-authz-embedded-'));
    await chmod(parent, 0o700);
  });
  after(async () => {
    if (parent) await rm(parent, { recursive: true, force: true });
  });

  it('keeps its data across restarts, is joined rather than started twice, and stops even after dying on its own', async () => {
    const dataDir = join(parent, 'kept');
    const first = await startEmbeddedPostgres({ dataDir, persistent: true });
    assert.deepEqual([first.ownedByUs, first.created], [true, true]);
    const sql = new pg.Client({ connectionString: first.url });
    await sql.connect();
    await sql.query('CREATE TABLE kept (n int)');
    await sql.end();

    const joined = await startEmbeddedPostgres({ dataDir, persistent: true });
    assert.deepEqual([joined.ownedByUs, joined.created, joined.url], [false, false, first.url]);

    // The server dies under us (an operator's pg_ctl stop, a crash): stop() must still return.
    const pidFile = join(dataDir, 'pg', 'postmaster.pid');
    const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
    process.kill(pid, 'SIGINT');
    for (let waited = 0; existsSync(pidFile) && waited < 20_000; waited += 50) await sleep(50);
    await first.stop();

    const again = await startEmbeddedPostgres({ dataDir, persistent: true });
    try {
      assert.deepEqual([again.ownedByUs, again.created], [true, false]);
      assert.equal(await holdsTable(again.url, 'kept'), true);
    } finally {
      await again.stop();
    }
    assert.equal((await stat(parent)).mode & 0o777, 0o700, 'the enclosing folder was opened up');
    assert.equal((await stat(join(dataDir, 'postgres-password'))).mode & 0o077, 0, 'the password is readable by others');
    assert.deepEqual((await readdir(dataDir)).filter((name) => /password/.test(name)), ['postgres-password']);
  });

  it('is created and started once by two that start it at the same time; the other joins', async () => {
    const dataDir = join(parent, 'raced');
    const both = await Promise.all([startEmbeddedPostgres({ dataDir, persistent: false }), startEmbeddedPostgres({ dataDir, persistent: false })]);
    const owner = both.find((server) => server.ownedByUs);
    try {
      assert.deepEqual(both.map((server) => server.ownedByUs).sort(), [false, true]);
      assert.deepEqual(both.map((server) => server.created).sort(), [false, true]);
      assert.equal(both[0]?.url, both[1]?.url);
      assert.equal(await holdsTable(both[0]?.url ?? '', 'pg_class'), true);
    } finally {
      await owner?.stop();
    }
    assert.deepEqual((await readdir(dataDir)).filter((name) => name.startsWith('pg.new-')), [], 'the losing initdb copy was left behind');
  });

  it('waits for a command that started the server to stop it, rather than join it and lose it', async () => {
    const dataDir = join(parent, 'exclusive');
    const command = await startEmbeddedPostgres({ dataDir, persistent: false, exclusive: true });
    let settled = false;
    const next = startEmbeddedPostgres({ dataDir, persistent: false }).finally(() => (settled = true));
    await sleep(1_000);
    assert.equal(settled, false, 'joined a server that its command was about to stop');
    await command.stop();
    const server = await next;
    try {
      assert.equal(server.ownedByUs, true);
      assert.equal(await holdsTable(server.url, 'pg_class'), true);
    } finally {
      await server.stop();
    }
  });

  it('says in one line why the server did not start, and what to do', async () => {
    const dataDir = join(parent, 'kept');
    await appendFile(join(dataDir, 'pg', 'postgresql.auto.conf'), "shared_buffers = 'plenty'\n");
    const failure = await startEmbeddedPostgres({ dataDir, persistent: true }).then(
      () => assert.fail('started with a bad setting'),
      (error: unknown) => error,
    );
    assert.ok(failure instanceof EmbeddedPostgresError, String(failure));
    assert.match(failure.message, /^the embedded PostgreSQL did not start: .*"shared_buffers": "plenty".*; see .*postgresql\.log, or set DATABASE_URL/);
    assert.doesNotMatch(failure.message, /\n/);
  });
});
