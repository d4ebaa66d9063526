import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAlive } from '../../src/embedded/embedded-postgres.js';

/**
 * The watcher beside a throw-away embedded PostgreSQL, with a stand-in for the server (a `sleep` in
 * the cluster directory, named by a postmaster.pid as PostgreSQL names itself): its owner is killed
 * the moment it has started the watcher, before the watcher's own modules have loaded.
 */
const EMBEDDED = new URL('../../src/embedded/embedded-postgres.js', import.meta.url).href;

async function until(what: string, holds: () => boolean, limitMs = 15_000): Promise<void> {
  for (const deadline = Date.now() + limitMs; !holds(); await sleep(50)) {
    if (Date.now() > deadline) assert.fail(`${what}: not within ${limitMs} ms`);
  }
}

/** An owner that starts the watcher for `serverPid` and is killed at once; resolves to the watcher's pid. */
async function ownerKilledAtOnce(serverPid: number, clusterDir: string): Promise<number> {
  const script = `const { stopWhenOwnerDies } = await import(${JSON.stringify(EMBEDDED)}); console.log(stopWhenOwnerDies(${serverPid}, ${JSON.stringify(clusterDir)})); process.kill(process.pid, 'SIGKILL');`;
  const owner = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let printed = '';
  owner.stdout!.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  await once(owner, 'exit');
  const watcher = Number(printed.trim());
  assert.ok(watcher > 0, `the owner printed no watcher pid: ${JSON.stringify(printed)}`);
  return watcher;
}

describe('the watcher of a throw-away embedded server', () => {
  const started: ChildProcess[] = [];
  const dirs: string[] = [];
  after(async () => {
    for (const child of started) child.kill('SIGKILL');
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  async function standIn(): Promise<{ server: ChildProcess; clusterDir: string }> {
    const clusterDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-owner-watch-'));
    dirs.push(clusterDir);
    const server = spawn('sleep', ['300'], { cwd: clusterDir, detached: true, stdio: 'ignore' });
    started.push(server);
    await once(server, 'spawn');
    return { server, clusterDir };
  }

  it('stops the server when its owner is killed, even before the watcher listens for that', async () => {
    const { server, clusterDir } = await standIn();
    await writeFile(join(clusterDir, 'postmaster.pid'), `${server.pid}\n${clusterDir}\n`);
    const watcher = await ownerKilledAtOnce(server.pid!, clusterDir);
    await until('the server to be stopped', () => server.exitCode !== null || server.signalCode !== null);
    assert.equal(server.signalCode, 'SIGINT');
    await until('the watcher to exit', () => !isAlive(watcher));
  });

  it('signals nothing when postmaster.pid names another process: the pid may have been reused', async () => {
    const { server, clusterDir } = await standIn();
    await writeFile(join(clusterDir, 'postmaster.pid'), `${server.pid! + 1_000_000}\n${clusterDir}\n`);
    const watcher = await ownerKilledAtOnce(server.pid!, clusterDir);
    // The watcher waits for a server still starting to name itself, then gives up.
    await until('the watcher to give up', () => !isAlive(watcher), 20_000);
    assert.equal(server.exitCode, null);
    assert.equal(server.signalCode, null);
  });
});
