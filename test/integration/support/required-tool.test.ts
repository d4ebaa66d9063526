import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';

const REQUIRED_TOOL = pathToFileURL(join(import.meta.dirname, '..', '..', 'support', 'required-tool.js')).href;

/** A test file that needs a tool nobody has, run by node --test as the suite runs it. */
function runNeedingMissingTool(ci: boolean): { code: number | null; output: string } {
  const file = join(folder, 'needs-tool.test.mjs');
  writeFileSync(
    file,
    `import { it } from 'node:test';\nimport { skipWithoutTool } from ${JSON.stringify(REQUIRED_TOOL)};\n` +
      `it('uses the tool', { skip: skipWithoutTool('frobnicator', 'frobnicator is not installed') }, () => {});\n`,
  );
  // Without the parent's NODE_TEST_CONTEXT, which would make the child a part of this run instead of its own.
  const { NODE_TEST_CONTEXT: _parentRun, ...inherited } = process.env;
  const env = { ...inherited, CI: ci ? 'true' : '' };
  const run = spawnSync(process.execPath, ['--test', '--test-reporter=tap', file], { env, encoding: 'utf8' });
  return { code: run.status, output: run.stdout + run.stderr };
}

const folder = mkdtempSync(join(tmpdir(), 'required-tool-'));

describe('a test that needs a tool beyond Node', () => {
  after(() => rmSync(folder, { recursive: true, force: true }));

  it('is skipped where the tool is missing on a developer machine', () => {
    const { code, output } = runNeedingMissingTool(false);
    assert.equal(code, 0, output);
    assert.match(output, /# SKIP frobnicator is not installed/);
  });

  it('fails the run where the tool is missing in CI (CI=true), naming the tool', () => {
    const { code, output } = runNeedingMissingTool(true);
    assert.notEqual(code, 0, output);
    assert.match(output, /not ok \d+ - frobnicator is installed, as CI requires/);
    assert.match(output, /CI=true and frobnicator is not installed/);
  });
});
