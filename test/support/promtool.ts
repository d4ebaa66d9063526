import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { skipWithoutTool } from './required-tool.js';

function onPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Prometheus' promtool (Debian's `prometheus` package; `.ci/run` installs it), when present. */
export const PROMTOOL = onPath('promtool');

/** For node:test's `skip`: a test that needs promtool reports itself skipped where it is missing (failed in CI), never passed. */
export const WITHOUT_PROMTOOL: string | false = skipWithoutTool('promtool', PROMTOOL === undefined ? 'promtool is not installed (apt-get install prometheus provides it)' : false);

export interface PromtoolResult {
  readonly code: number | null;
  readonly output: string;
}

/** Runs promtool with `args`, feeding `stdin`; resolves with its exit code and everything it printed. */
export function promtool(args: readonly string[], stdin = ''): Promise<PromtoolResult> {
  if (PROMTOOL === undefined) throw new Error(WITHOUT_PROMTOOL || 'promtool missing');
  const child = spawn(PROMTOOL, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stdin.end(stdin);
  return new Promise((resolveRun, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolveRun({ code, output }));
  });
}
