import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGE_ROOT } from '../src/paths.js';
import { EmbeddedPostgresError, startEmbeddedPostgres, type EmbeddedServer } from '../src/embedded/embedded-postgres.js';

/**
 * `make test`: one PostgreSQL server for the whole run (embedded, unless TEST_DATABASE_URL names one),
 * then node's test runner over every compiled test file; each file makes its own fresh database.
 * `make test-unit` (`--lane=unit`): the tests outside test/integration/, which need no database, no
 * child process and no network, without starting PostgreSQL. Other arguments pick files by substring.
 */
const testRoot = fileURLToPath(new URL('.', import.meta.url));
const INTEGRATION_LANE = join(testRoot, 'integration');
const SOURCE_ROOT = join(PACKAGE_ROOT, 'test');
const SUMMARY_REPORTER = fileURLToPath(new URL('./failure-summary.js', import.meta.url));

const args = process.argv.slice(2);
const unitLane = args.includes('--lane=unit');
const filters = args.filter((arg) => !arg.startsWith('--lane='));

async function testFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.test.js'))
    .map((entry) => join(entry.parentPath, entry.name))
    // tsc leaves the output of a moved or deleted test behind: only files whose source is there run.
    .filter((file) => existsSync(join(SOURCE_ROOT, relative(testRoot, file)).replace(/\.js$/, '.ts')))
    .filter((file) => !unitLane || !file.startsWith(INTEGRATION_LANE))
    .filter((file) => filters.length === 0 || filters.some((part) => file.includes(part)))
    .sort();
}

/** node --test over the files, TAP on stdout followed by the summary of failures. */
function runTests(files: readonly string[], env: NodeJS.ProcessEnv): ChildProcess {
  const reporters = ['--test-reporter=tap', '--test-reporter-destination=stdout', `--test-reporter=${SUMMARY_REPORTER}`, '--test-reporter-destination=stdout'];
  return spawn(process.execPath, ['--test', '--test-concurrency=2', ...reporters, ...files], { stdio: 'inherit', env });
}

async function main(): Promise<number> {
  const files = await testFiles(testRoot);
  if (files.length === 0) {
    console.error(`no test files matched under ${relative(process.cwd(), testRoot)}`);
    return 1;
  }
  // Ctrl-C reaches us and the test runner (same process group) but not PostgreSQL, which runs in its
  // own session: pass signals on to the runner, and outlive it to stop PostgreSQL and remove its data.
  let child: ChildProcess | undefined;
  let interrupted = false;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      interrupted = true;
      child?.kill(signal);
    });
  }
  if (unitLane) {
    // No database in this lane: a test that asks for one fails, naming the lane it belongs to.
    const { TEST_DATABASE_URL: _ignored, ...env } = process.env;
    child = runTests(files, { ...env, SITEKEY_TEST_LANE: 'unit' });
    return await new Promise<number>((resolveCode) => child?.on('exit', (code) => resolveCode(code ?? 1)));
  }
  let server: EmbeddedServer | undefined;
  let dataDir: string | undefined;
  let databaseUrl = process.env.TEST_DATABASE_URL;
  if (!databaseUrl) {
    dataDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-test-'));
    try {
      server = await startEmbeddedPostgres({ dataDir, persistent: false });
    } catch (error) {
      await rm(dataDir, { recursive: true, force: true });
      if (!(error instanceof EmbeddedPostgresError)) throw error;
      console.error(`${error.message}, or TEST_DATABASE_URL for the tests`);
      return 1;
    }
    databaseUrl = server.url;
  }
  try {
    if (interrupted) return 130;
    const runner = runTests(files, { ...process.env, TEST_DATABASE_URL: databaseUrl });
    child = runner;
    return await new Promise<number>((resolveCode) => runner.on('exit', (code) => resolveCode(code ?? 1)));
  } finally {
    await server?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
