import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddedPostgresError, startEmbeddedPostgres, type EmbeddedServer } from '../src/store/embedded-postgres.js';

/**
 * `make test`: one PostgreSQL server for the whole run (embedded, unless TEST_DATABASE_URL names one),
 * then node's test runner over every compiled test file; each file makes its own fresh database.
 */
const testRoot = fileURLToPath(new URL('.', import.meta.url));

async function testFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.test.js'))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((file) => process.argv.length <= 2 || process.argv.slice(2).some((part) => file.includes(part)))
    .sort();
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
    const runner = spawn(process.execPath, ['--test', '--test-concurrency=2', ...files], {
      stdio: 'inherit',
      env: { ...process.env, TEST_DATABASE_URL: databaseUrl },
    });
    child = runner;
    return await new Promise<number>((resolveCode) => runner.on('exit', (code) => resolveCode(code ?? 1)));
  } finally {
    await server?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
