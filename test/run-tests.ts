import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmbeddedPostgres, type EmbeddedServer } from '../src/store/embedded-postgres.js';

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
  let server: EmbeddedServer | undefined;
  let dataDir: string | undefined;
  let databaseUrl = process.env.TEST_DATABASE_URL;
  if (!databaseUrl) {
    dataDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-test-'));
    server = await startEmbeddedPostgres({ dataDir, persistent: false });
    databaseUrl = server.url;
  }
  try {
    const child = spawn(process.execPath, ['--test', '--test-concurrency=2', ...files], {
      stdio: 'inherit',
      env: { ...process.env, TEST_DATABASE_URL: databaseUrl },
    });
    return await new Promise<number>((resolveCode) => child.on('exit', (code) => resolveCode(code ?? 1)));
  } finally {
    await server?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
