import { test } from 'node:test';

/**
 * For node:test's `skip`: a test that needs a tool beyond Node (chromium, promtool, podman) reports itself
 * skipped where the tool is missing on a developer's machine. In CI (CI=true), where .ci/run installs it,
 * a missing tool fails the run instead, with one test that names it: a skip there would pass unseen.
 */
export function skipWithoutTool(tool: string, missing: string | false | undefined): string | false {
  if (missing === undefined || missing === false) return false;
  if (process.env.CI === 'true') {
    test(`${tool} is installed, as CI requires`, () => {
      throw new Error(`CI=true and ${missing}`);
    });
  }
  return missing;
}
