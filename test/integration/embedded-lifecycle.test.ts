import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFile, chmod, mkdir, mkdtemp, readdir, readlink, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/embedded/embedded-postgres.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { runCli, startService, type RunningService } from '../support/service.js';

/**
 * The embedded database's life with `serve` and the CLI, with DATABASE_URL unset, as a newcomer meets
 * it: as root in a folder no one else may enter, interrupted with Ctrl-C, killed with kill -9.
 */

/** PostgreSQL processes working in clusterDir (their current directory, or one below it), whoever started them. */
async function postgresIn(clusterDir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    const cwd = /^\d+$/.test(entry) ? await readlink(`/proc/${entry}/cwd`).catch(() => '') : '';
    if (cwd === clusterDir || cwd.startsWith(`${clusterDir}/`)) pids.push(Number(entry));
  }
  return pids;
}

/** Files whose name says they hold a PostgreSQL password, as embedded-postgres left them in the temp folder. */
async function passwordFilesIn(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).filter((name) => /pg-password|pwfile/i.test(name));
}

async function cli(dataDir: string, tmp: string, args: string[]) {
  const result = await runCli('', args, undefined, { DATA_DIR: dataDir, TMPDIR: tmp });
  assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

async function eventually(what: string, probe: () => Promise<boolean>, limitMs = 15_000): Promise<void> {
  for (const deadline = Date.now() + limitMs; !(await probe()); await sleep(100)) {
    if (Date.now() > deadline) assert.fail(`${what}: not within ${limitMs} ms`);
  }
}

/** A site with a key and an allowlist, made with the CLI beside the running serve; the key's id and key. */
async function siteWithKey(dataDir: string, tmp: string, siteId: string): Promise<{ keyId: string; apiKey: string }> {
  await cli(dataDir, tmp, ['site', 'add', siteId]);
  await cli(dataDir, tmp, ['ip', 'allow', siteId, '203.0.113.0/24']);
  return JSON.parse(await cli(dataDir, tmp, ['key', 'issue', siteId, '--json'])) as { keyId: string; apiKey: string };
}

async function allowed(service: RunningService, siteId: string, apiKey: string): Promise<boolean> {
  const client = authorizationClient(service.grpcTarget);
  try {
    const request = { authorization: `${siteId}:${apiKey}`, body: JSON.stringify({ siteid: Number(siteId), apikey: apiKey }) };
    return verdict(await check(client, request)) === 'allow';
  } finally {
    client.close();
  }
}

describe('the embedded database with serve and the CLI', { timeout: 180_000 }, () => {
  let parent: string;
  let tmp: string;
  before(async () => {
    // A folder only its owner may enter, as `mktemp -d` makes it and as root's home is.
    parent = await mkdtemp(join(tmpdir(), 'sitekey-authz-lifecycle-'));
    await chmod(parent, 0o700);
    // The children's temp folder: a password file written there would be seen.
    tmp = join(parent, 'tmp');
    await mkdir(tmp);
  });
  after(async () => {
    if (!parent) return;
    // A failed test must not leave its PostgreSQL behind (immediate shutdown).
    for (const pid of await postgresIn(parent)) process.kill(pid, 'SIGQUIT');
    await rm(parent, { recursive: true, force: true });
  });

  it('starts inside a mode-700 folder, and Ctrl-C drains, keeps the last-used time and stops PostgreSQL', async () => {
    const dataDir = join(parent, 'clone', '.data');
    const clusterDir = join(dataDir, 'pg');
    const service = await startService({ DATA_DIR: dataDir, TMPDIR: tmp, LAST_USED_FLUSH_SECONDS: '3600' }, { detached: true });
    let exitCode: number | null = null;
    try {
      const { keyId, apiKey } = await siteWithKey(dataDir, tmp, '1001');
      // The commands joined the server serve runs and left it running.
      await eventually('the issued key is allowed', () => allowed(service, '1001', apiKey));
      assert.match(await cli(dataDir, tmp, ['db', 'url']), /^postgres:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/postgres\n$/);
      assert.notEqual((await postgresIn(clusterDir)).length, 0);

      const exited = once(service.process, 'exit');
      // A terminal's Ctrl-C: SIGINT to every process of the foreground process group.
      process.kill(-(service.process.pid ?? 0), 'SIGINT');
      [exitCode] = (await exited) as [number | null];
      assert.equal(exitCode, 0, service.output());
      assert.doesNotMatch(service.output(), /LISTEN connection lost|terminating connection|"level":50/);
      assert.deepEqual(await postgresIn(clusterDir), [], 'PostgreSQL outlived serve');

      const again = await startEmbeddedPostgres({ dataDir, persistent: true });
      try {
        const sql = new pg.Client({ connectionString: again.url });
        await sql.connect();
        const { rows } = await sql.query<{ used: boolean }>('SELECT last_used_at IS NOT NULL AS used FROM api_keys WHERE id = $1', [keyId]);
        await sql.end();
        assert.deepEqual(rows, [{ used: true }], 'the last-used time of the allowed check was lost');
      } finally {
        await again.stop();
      }
    } finally {
      if (exitCode === null) await service.stop();
    }
    assert.equal((await stat(parent)).mode & 0o777, 0o700, 'the enclosing folder was opened up');
    assert.equal((await stat(join(dataDir, 'postgres-password'))).mode & 0o077, 0, 'the password file is readable by others');
    assert.deepEqual([...(await passwordFilesIn(tmp)), ...(await passwordFilesIn(dataDir))], []);
  });

  it('takes over the database a kill -9 left running, serves from it and stops it on exit', async () => {
    const dataDir = join(parent, 'killed');
    const clusterDir = join(dataDir, 'pg');
    const killed = await startService({ DATA_DIR: dataDir, TMPDIR: tmp }, { detached: true });
    const { apiKey } = await siteWithKey(dataDir, tmp, '2002');
    const exited = once(killed.process, 'exit');
    killed.process.kill('SIGKILL');
    await exited;
    assert.notEqual((await postgresIn(clusterDir)).length, 0, 'expected PostgreSQL to outlive a kill -9 of serve');

    const next = await startService({ DATA_DIR: dataDir, TMPDIR: tmp }, { detached: true });
    try {
      assert.equal(await allowed(next, '2002', apiKey), true);
    } finally {
      assert.equal(await next.stop(), 0, next.output());
    }
    assert.deepEqual(await postgresIn(clusterDir), [], 'the taken-over PostgreSQL outlived serve');
  });

  it('stops a throw-away server (tests, benchmarks) whose owner was killed, since no later start takes it over', async () => {
    const dataDir = join(parent, 'throw-away');
    const clusterDir = join(dataDir, 'pg');
    const embedded = new URL('../../src/embedded/embedded-postgres.js', import.meta.url).href;
    const owner = spawn(
      process.execPath,
      ['--input-type=module', '-e', `const { startEmbeddedPostgres } = await import(${JSON.stringify(embedded)}); await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, persistent: false }); console.log('ready'); setInterval(() => {}, 1000);`],
      { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, TMPDIR: tmp } },
    );
    const exited = once(owner, 'exit');
    const [ready] = (await Promise.race([once(owner.stdout!, 'data'), exited.then(() => [Buffer.from('exited')])])) as [Buffer];
    assert.equal(ready.toString().trim(), 'ready');
    assert.notEqual((await postgresIn(clusterDir)).length, 0);
    owner.kill('SIGKILL');
    await exited;
    await eventually('PostgreSQL to stop after its owner was killed', async () => (await postgresIn(clusterDir)).length === 0);
  });

  it('says in one line why the database did not start, exits non-zero and leaves no password file', async () => {
    const dataDir = join(parent, 'broken');
    const made = await startEmbeddedPostgres({ dataDir, persistent: true });
    await made.stop();
    await appendFile(join(dataDir, 'pg', 'postgresql.auto.conf'), "shared_buffers = 'plenty'\n");
    for (const args of [['serve'], ['site', 'list']]) {
      const result = await runCli('', args, undefined, { DATA_DIR: dataDir, TMPDIR: tmp, LOG_LEVEL: 'warn' });
      assert.equal(result.code, 1, result.stderr);
      assert.equal(result.stderr.trimEnd().split('\n').length, 1, `more than one line on stderr:\n${result.stderr}`);
      assert.match(result.stderr, /^sitekey-authz: the embedded PostgreSQL .*shared_buffers.*DATABASE_URL/);
    }
    assert.deepEqual(await postgresIn(join(dataDir, 'pg')), []);
    assert.deepEqual([...(await passwordFilesIn(tmp)), ...(await passwordFilesIn(dataDir))], []);
  });
});
