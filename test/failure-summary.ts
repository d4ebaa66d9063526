import type { TestEvent } from 'node:test/reporters';

/** What a failed test's line in the summary says. */
interface Failure {
  readonly name: string;
  readonly file: string | undefined;
  readonly line: number | undefined;
  readonly firstLine: string;
}

/** The first line of what the test threw: node's runner wraps it, so the cause is what the test said. */
function firstLineOf(error: unknown): string {
  const thrown = (error as { cause?: unknown } | undefined)?.cause ?? error;
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  return message.split('\n').find((line) => line.trim() !== '')?.trim() ?? '(no message)';
}

/**
 * A node:test reporter that prints, after the TAP stream, the failed tests with their files and
 * the first line of each failure, then one closing line: a failing run of 1,000+ tests is then read
 * from its end, not searched through thousands of lines.
 */
export default async function* failureSummary(source: AsyncIterable<TestEvent>): AsyncGenerator<string, void> {
  let passed = 0;
  let skipped = 0;
  let failed = 0;
  const failures: Failure[] = [];
  for await (const event of source) {
    if (event.type === 'test:pass') {
      const skip = event.data.skip !== undefined && event.data.skip !== false;
      // A skipped suite (a tool that is missing) counts as one skipped test: its tests never ran.
      if (skip) skipped += 1;
      else if (event.data.details.type !== 'suite') passed += 1;
    }
    if (event.type === 'test:fail') {
      const failureType = (event.data.details.error as { failureType?: string }).failureType;
      const leaf = event.data.details.type !== 'suite';
      if (leaf) failed += 1;
      // A suite is listed only when it failed itself (a hook); a test cancelled with its suite is not:
      // the suite's own failure says why.
      const listed = leaf ? failureType !== 'cancelledByParent' : failureType !== 'subtestsFailed';
      if (listed) failures.push({ name: event.data.name, file: event.data.file, line: event.data.line, firstLine: firstLineOf(event.data.details.error) });
    }
  }
  const lines = ['', `summary of ${passed + failed + skipped} tests:`];
  for (const failure of failures) {
    const where = failure.file === undefined ? '' : ` (${failure.file.replace(/^.*\/dist\//, 'dist/')}${failure.line === undefined ? '' : `:${failure.line}`})`;
    lines.push(`  FAILED ${failure.name}${where}`, `         ${failure.firstLine}`);
  }
  lines.push(`summary: ${passed} passed, ${failed} failed, ${skipped} skipped`, '');
  yield lines.join('\n');
}
