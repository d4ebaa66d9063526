import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

const REPORTER = fileURLToPath(new URL('../failure-summary.js', import.meta.url));

describe('the summary at the end of make test', () => {
  it("names each failed test, its file and its failure's first line, then counts, without the cancelled ones", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'summary-'));
    try {
      const file = join(dir, 'fixture.test.mjs');
      await writeFile(
        file,
        `import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
it('passes', () => {});
it('compares', () => assert.equal(1 + 1, 3));
it.skip('is skipped', () => {});
describe('a suite skipped for a missing tool', { skip: 'no such tool' }, () => {
  it('never runs', () => {});
});
describe('a suite whose hook fails', () => {
  before(() => { throw new Error('no database here\\nsecond line'); });
  it('is cancelled', () => {});
});
`,
      );
      // Without NODE_TEST_CONTEXT, which tells a node --test inside a test to report to its parent instead.
      const { NODE_TEST_CONTEXT: _parent, ...env } = process.env;
      const run = spawnSync(process.execPath, ['--test', `--test-reporter=${REPORTER}`, '--test-reporter-destination=stdout', file], { encoding: 'utf8', env });
      assert.notEqual(run.status, 0);
      const lines = run.stdout.trim().split('\n');
      assert.equal(lines.at(-1), 'summary: 1 passed, 2 failed, 2 skipped');
      assert.ok(lines.some((line) => line.startsWith('  FAILED compares (') && line.includes('fixture.test.mjs:4')), run.stdout);
      assert.ok(lines.some((line) => line.trim() === 'Expected values to be strictly equal:'), run.stdout);
      assert.ok(lines.some((line) => line.startsWith('  FAILED a suite whose hook fails')), run.stdout);
      assert.ok(lines.some((line) => line.trim() === 'no database here'), run.stdout);
      assert.ok(!run.stdout.includes('FAILED is cancelled'), run.stdout);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
