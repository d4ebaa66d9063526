/** What a command prints: `text` for people, `json` with --json for scripts. */
export interface CommandOutput {
  readonly text: string;
  readonly json: unknown;
  /** Said on standard error even with --json, e.g. an allowlist that admits everyone. */
  readonly warnings?: readonly string[];
  /** The exit status when it is not 0: `check` and `explain` exit 1 on a denial, 2 without a verdict. */
  readonly exitCode?: number;
}

/** Left-aligned columns under upper-case headings, for the `list` commands. */
export function table(headings: readonly string[], rows: ReadonlyArray<ReadonlyArray<string>>): string {
  const widths = headings.map((heading, column) => Math.max(heading.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headings), ...rows.map(line)].join('\n');
}

/** Timestamps in lists: minutes are enough to read, the JSON output has the exact instant. */
export function shortTime(iso: string | null, absent = '-'): string {
  return iso === null ? absent : `${iso.slice(0, 16).replace('T', ' ')}Z`;
}
