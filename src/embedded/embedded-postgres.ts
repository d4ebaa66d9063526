import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chown, link, mkdir, mkdtemp, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort, isAlive, signalIfThere } from './processes.js';
import { binaryPackage, EmbeddedPostgresError, OR_DATABASE_URL, OS_USER, reason, runnerFor, spawned, spawnIn, type Runner } from './postgres-binaries.js';

export { EmbeddedPostgresError } from './postgres-binaries.js';
export { freePort, freePorts, isAlive } from './processes.js';

// The package's binaries run here, not by its class (which cannot start the server in its own session, pass a password
// without a file, run as root). The owner, named on the server's command line, stops it; others join or take it over.
export interface EmbeddedServer {
  readonly url: string;
  readonly ownedByUs: boolean;
  /** This process ran initdb. */
  readonly created: boolean;
  /** The dead owner whose server this process stopped to start its own. */
  readonly tookOverFrom?: number;
  stop(): Promise<void>;
}

interface EmbeddedOptions {
  readonly dataDir: string;
  /** False: a throw-away cluster (tests): no fsync. */
  readonly persistent: boolean;
  readonly port?: number;
  /** This process will stop the server it starts in a moment: others wait rather than lose it under their feet. */
  readonly exclusive?: boolean;
}

const SUPERUSER = 'postgres';
const OWNER = 'sitekey_authz.owner';
const EXCLUSIVE = 'sitekey_authz.exclusive';
const WAIT_MS = 60_000;
const POLL_MS = 100;

function urlFor(password: string, port: number): string {
  return `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
}

async function passwordFor(dataDir: string): Promise<string> {
  const file = join(dataDir, 'postgres-password');
  if (!existsSync(file)) {
    // Written aside and linked into place: a racing process reads a whole password, never half of one.
    const mine = `${file}.${randomBytes(6).toString('hex')}`;
    await writeFile(mine, `${randomBytes(18).toString('base64url')}\n`, { mode: 0o600 });
    try {
      await link(mine, file).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
    } finally {
      await rm(mine, { force: true });
    }
  }
  return (await readFile(file, 'utf8')).trim();
}

// Renamed into place, so of two processes one wins (resolves to whether it was ours). The password reaches initdb
// as an inherited descriptor (/dev/fd/3) of a file unlinked before it was written: none stays on disk.
async function createCluster(clusterDir: string, password: string, runner: Runner, persistent: boolean): Promise<boolean> {
  const staging = await mkdtemp(`${clusterDir}.new-`);
  try {
    if (runner.user) await chown(staging, runner.user.uid, runner.user.gid);
    const passwordPath = join(staging, `.password-${randomBytes(6).toString('hex')}`);
    const passwordFile = await open(passwordPath, 'wx', 0o600);
    let output = '';
    let code: number | null;
    try {
      await rm(passwordPath);
      // initdb opens /dev/fd/3 anew, as OS_USER; written at offset 0 so the descriptor's own stays there.
      if (runner.user) await passwordFile.chown(runner.user.uid, runner.user.gid);
      await passwordFile.write(`${password}\n`, 0);
      const args = (dataDir: string) => [
        `--pgdata=${dataDir}`, `--username=${SUPERUSER}`, '--pwfile=/dev/fd/3', '--auth=scram-sha-256',
        '--encoding=UTF8', '--no-locale', '--no-instructions', ...(persistent ? [] : ['--no-sync']),
      ];
      const initdb = spawnIn(staging, runner, 'initdb', args, ['ignore', 'pipe', 'pipe', passwordFile.fd]);
      initdb.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      initdb.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      code = await new Promise<number | null>((resolveExit, reject) => {
        initdb.once('error', reject);
        initdb.once('close', resolveExit);
      });
    } catch (error) {
      throw new EmbeddedPostgresError(`initdb did not run (${reason(error)})`, OR_DATABASE_URL);
    } finally {
      await passwordFile.close();
    }
    if (code !== 0) {
      const said = output.split('\n').filter((line) => /error|fatal/i.test(line)).join(' ') || output.trim().split('\n').pop();
      throw new EmbeddedPostgresError(`initdb failed in ${dirname(clusterDir)}: ${said}`, `choose another DATA_DIR, ${OR_DATABASE_URL}`);
    }
    try {
      await rename(staging, clusterDir);
      return true;
    } catch (error) {
      if (existsSync(join(clusterDir, 'PG_VERSION'))) return false;
      throw new EmbeddedPostgresError(`could not put the new cluster in ${clusterDir} (${reason(error)})`, `remove it or choose another DATA_DIR, ${OR_DATABASE_URL}`);
    }
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

interface RunningCluster {
  readonly pid: number;
  readonly port: number;
  readonly ready: boolean;
  readonly owner?: { readonly pid: number; readonly exclusive: boolean };
}

// From postmaster.pid and, once ready, the server's answer of who owns it. A pid file that outlived its server (a
// reboot) may name a live process that is no server: without that answer it counts as none, and PostgreSQL decides.
async function runningCluster(clusterDir: string, password: string): Promise<RunningCluster | undefined> {
  const [pidLine, , , portLine, , , , status] = (await readFile(join(clusterDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n');
  const pid = Number(pidLine);
  const port = Number(portLine);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return undefined;
  if (status?.trim() !== 'ready') return { pid, port, ready: false };
  const answer = await queryOnce<{ owner: string | null; exclusive: string | null }>(
    urlFor(password, port),
    `SELECT current_setting('${OWNER}', true) AS owner, current_setting('${EXCLUSIVE}', true) AS exclusive`,
  );
  if (answer instanceof Error) {
    if (/^28/.test((answer as { code?: string }).code ?? '')) {
      throw new EmbeddedPostgresError(`the server running in ${clusterDir} refuses the password in ${join(dirname(clusterDir), 'postgres-password')}`, `stop it, ${OR_DATABASE_URL}`);
    }
    return undefined;
  }
  const owner = Number(answer[0]?.owner ?? NaN);
  return { pid, port, ready: true, ...(owner > 0 ? { owner: { pid: owner, exclusive: answer[0]?.exclusive === 'on' } } : {}) };
}

export async function runningEmbeddedUrl(dataDir: string): Promise<string | undefined> {
  const password = await readFile(join(dataDir, 'postgres-password'), 'utf8').catch(() => undefined);
  const running = password === undefined ? undefined : await runningCluster(join(dataDir, 'pg'), password.trim());
  return running?.ready ? urlFor(password?.trim() ?? '', running.port) : undefined;
}

async function queryOnce<Row extends pg.QueryResultRow>(url: string, sql: string): Promise<Row[] | Error> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.query<Row>(sql)).rows;
  } catch (error) {
    return error as Error;
  } finally {
    await client.end().catch(() => {});
  }
}

async function logSince(logFile: string, offset: number): Promise<string[]> {
  return (await readFile(logFile).catch(() => Buffer.alloc(0))).subarray(offset).toString().split('\n').filter(Boolean);
}

const OWNER_WATCH = fileURLToPath(new URL('./owner-watch.js', import.meta.url));

/** No later start takes over a throw-away cluster, so a detached watcher stops it if this process dies. */
export function stopWhenOwnerDies(serverPid: number, clusterDir: string): number | undefined {
  const watcher = spawn(process.execPath, [OWNER_WATCH, String(serverPid), clusterDir], { detached: true, stdio: ['ignore', 'ignore', 'ignore', 'ipc'], env: {} });
  watcher.on('error', () => {}); // without one, a killed owner leaves the server running
  watcher.unref();
  watcher.channel?.unref();
  return watcher.pid;
}

/** Resolves to undefined when another process started it first: then the caller joins that one. */
async function startServer(options: EmbeddedOptions, clusterDir: string, password: string, runner: Runner): Promise<EmbeddedServer | undefined> {
  const port = options.port ?? (await freePort());
  const logFile = join(options.dataDir, 'postgresql.log');
  const log = await open(logFile, 'a', 0o600);
  const logOffset = (await log.stat()).size;
  const settings = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    // Whatever the cluster's own configuration: its log is read here.
    lc_messages: 'C',
    log_line_prefix: '%m [%p] ',
    max_connections: '300',
    ...(options.persistent ? {} : { fsync: 'off' }),
    [OWNER]: String(process.pid),
    [EXCLUSIVE]: options.exclusive === true ? 'on' : 'off',
  };
  const args = (dataDir: string) => ['-D', dataDir, '-p', String(port), ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])];
  const server = spawnIn(clusterDir, runner, 'postgres', args, ['ignore', log.fd, log.fd], true);
  // Listened for at once: a server that loses the start to another exits within milliseconds.
  let gone = false;
  const exited = new Promise<void>((resolveExit) =>
    server.once('exit', () => {
      gone = true;
      resolveExit();
    }),
  );
  try {
    await spawned(server);
  } catch (error) {
    throw new EmbeddedPostgresError(`postgres did not run (${reason(error)})`, `choose a DATA_DIR that ${runner.user ? `the "${OS_USER}" OS user` : 'you'} can write, ${OR_DATABASE_URL}`);
  } finally {
    await log.close();
  }
  // Our exit must not wait for the server: if we end without stopping it, the next start takes it over.
  server.unref();
  if (!options.persistent) stopWhenOwnerDies(server.pid!, clusterDir);
  const stop = async () => {
    server.ref();
    if (!gone) server.kill('SIGINT'); // fast shutdown: ends sessions, writes a checkpoint
    await exited;
  };
  const url = urlFor(password, port);
  for (const deadline = Date.now() + WAIT_MS; ; await sleep(POLL_MS)) {
    const outcome = await Promise.race([
      queryOnce<{ owner: string | null }>(url, `SELECT current_setting('${OWNER}', true) AS owner`),
      exited.then(() => 'exited' as const),
    ]);
    // The server on our port must say it is ours: one started at the same moment by another process
    // can have been given the same free port, and then it answers while ours is refused the start.
    if (Array.isArray(outcome)) {
      if (outcome[0]?.owner === String(process.pid)) return { url, ownedByUs: true, created: false, stop };
      await stop();
      return undefined;
    }
    if (outcome === 'exited' || gone) {
      const said = await logSince(logFile, logOffset);
      // Another process started first: join it, or, if it has stopped again meanwhile, start anew.
      const lostTheStart = said.some((line) => line.includes(`[${server.pid}] FATAL:  lock file "postmaster.pid" already exists`));
      if (lostTheStart || (await runningCluster(clusterDir, password)) !== undefined) return undefined;
      const cause = said.slice(-4).map((line) => line.replace(/^\S+ \S+ \S+ \[\d+\] /, '')).join(' ') || 'it exited without a word';
      throw new EmbeddedPostgresError(`postgres stopped in ${clusterDir}: ${cause}`, `see ${logFile}, ${OR_DATABASE_URL}`);
    }
    const code = (outcome as { code?: string }).code ?? '';
    if (code.startsWith('28') || Date.now() > deadline) {
      await stop();
      const cause = code.startsWith('28') ? `${outcome.message}: the cluster in ${clusterDir} was not made with the password in ${join(options.dataDir, 'postgres-password')}` : `no connection within ${WAIT_MS / 1000} s (${outcome.message})`;
      throw new EmbeddedPostgresError(cause, `see ${logFile}, ${OR_DATABASE_URL}`);
    }
  }
}

async function checkOwner(clusterDir: string, runner: Runner): Promise<void> {
  const owner = (await stat(clusterDir).catch(() => undefined))?.uid;
  const expected = runner.user?.uid ?? process.getuid?.();
  if (owner !== undefined && expected !== undefined && owner !== expected) {
    throw new EmbeddedPostgresError(
      `${clusterDir} belongs to another OS user (uid ${owner}) than the one PostgreSQL runs as (uid ${expected})`,
      `run as the user who made it, choose another DATA_DIR, ${OR_DATABASE_URL}`,
    );
  }
}

/** Starts the server in dataDir, or joins the one running there. */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const clusterDir = join(options.dataDir, 'pg');
  // Without the binaries (the image), say that DATABASE_URL is needed, not that /app/.data cannot be made.
  binaryPackage();
  try {
    await mkdir(options.dataDir, { recursive: true });
  } catch (error) {
    throw new EmbeddedPostgresError(`cannot create DATA_DIR ${options.dataDir} (${reason(error)})`, `choose a DATA_DIR you can write, ${OR_DATABASE_URL}`);
  }
  const runner = await runnerFor();
  await checkOwner(clusterDir, runner);
  const password = await passwordFor(options.dataDir);
  let created = false;
  let tookOverFrom: number | undefined;
  let lostTheStart = false;
  // Each server may keep us waiting WAIT_MS (starting, stopping, or held by a command).
  let waitingFor: number | undefined;
  let deadline = Date.now() + WAIT_MS;
  for (; ; await sleep(POLL_MS)) {
    const running = await runningCluster(clusterDir, password);
    if (running !== undefined && running.pid !== waitingFor) [waitingFor, deadline] = [running.pid, Date.now() + WAIT_MS];
    if (running === undefined) {
      if (!existsSync(join(clusterDir, 'PG_VERSION'))) created = (await createCluster(clusterDir, password, runner, options.persistent)) || created;
      const started = await startServer(options, clusterDir, password, runner);
      if (started) return { ...started, created, ...(tookOverFrom === undefined ? {} : { tookOverFrom }) };
      lostTheStart = true;
    } else if (running.ready) {
      const { owner } = running;
      if (owner !== undefined && !isAlive(owner.pid)) {
        // Its owner died without stopping it (kill -9): stop it, then start it as ours in a later round.
        tookOverFrom = owner.pid;
        signalIfThere(running.pid, 'SIGINT');
      } else if (!owner?.exclusive) {
        return { url: urlFor(password, running.port), ownedByUs: false, created, stop: async () => {} };
      }
    }
    if (Date.now() > deadline) {
      if (running === undefined && lostTheStart) {
        throw new EmbeddedPostgresError(
          `${clusterDir}/postmaster.pid names a live process that is no server there (left by a crash or reboot?)`,
          `if no PostgreSQL runs in ${clusterDir}, remove that file; ${OR_DATABASE_URL}`,
        );
      }
      throw new EmbeddedPostgresError(
        running?.owner?.exclusive ? `${clusterDir} is in use by process ${running.owner.pid}, a command that stops it when done` : `${clusterDir} did not become ready within ${WAIT_MS / 1000} s`,
        `wait for it, see ${join(options.dataDir, 'postgresql.log')}, ${OR_DATABASE_URL}`,
      );
    }
  }
}
