/** What a command prints: `text` for people, `json` with --json for scripts. */
export interface CommandOutput {
  readonly text: string;
  readonly json: unknown;
  readonly warnings?: readonly string[];
  readonly exitCode?: number;
}

// Control characters (C0, DEL, C1) and invisible direction controls move the cursor, retitle the window or
// make text display other than it reads. Rows that SQL wrote can hold them whatever the CLI refuses.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const UNPRINTABLE_BUT_LINE_BREAKS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

const escaped = (character: string): string => `\\u${(character.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`;

/** Text for one line of a terminal: every control character written as \u001b and so on, newlines too. */
export const oneLine = (text: string): string => text.replace(UNPRINTABLE, escaped);

/** Text for a terminal, line breaks kept: what every human-readable output passes through last. */
export const printable = (text: string): string => text.replace(UNPRINTABLE_BUT_LINE_BREAKS, escaped);

/** Left-aligned columns under upper-case headings, each cell on its line; `empty` when there are no rows. */
export function table(headings: readonly string[], rawRows: readonly (readonly string[])[], empty: string): string {
  if (rawRows.length === 0) return empty;
  const rows = rawRows.map((row) => row.map(oneLine));
  const widths = headings.map((heading, column) => Math.max(heading.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headings), ...rows.map(line)].join('\n');
}

/** Timestamps in lists to the minute; 'infinity' and '-infinity', which only SQL writes, as they are. */
export function shortTime(iso: string | null, absent = '-'): string {
  if (iso === null) return absent;
  return /^\d{4}-/.test(iso) ? `${iso.slice(0, 16).replace('T', ' ')}Z` : iso;
}
