import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

export const RESULTS_FILE = fileURLToPath(new URL('../../bench/RESULTS.md', import.meta.url));

/** Below the latest runs: one row per run ever recorded, newest first. Older sections live in git. */
export const HISTORY_HEADING = '## Headline figures of every run';
const HISTORY_HEAD = ['| run | commit | Node | command | headline |', '|---|---|---|---|---|'];
// "## 2026-11-26 15:28Z — `make bench`: serve beside …; 2 cores, Node v20.20.2"
const RUN_HEADING = /^## (\S+ \S+Z) — `(make \w+)`:.*Node (v[\d.]+)\s*$/;
const HEADLINE = /^\*\*(?:Headline: )?(.+)$/;

/** The commit the benchmarked build came from, short, or "unknown" outside a git checkout. */
export function currentRevision(): string {
  try {
    const revision = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return dirty === '' ? revision : `${revision}+changes`;
  } catch {
    return 'unknown';
  }
}

/** A run's row of the history table: when, which commit and Node, and its headline without the raw rates. */
export function historyRow(section: readonly string[], revision: string): string | undefined {
  const heading = RUN_HEADING.exec(section[0] ?? '');
  if (heading === null) return undefined;
  const [, when, command, node] = heading;
  const line = section.find((text) => text.startsWith('**Headline') || text.startsWith('**RSS')) ?? '';
  const headline = (HEADLINE.exec(line)?.[1] ?? 'no headline')
    .replace(/ \([^()]*(?:against|req\/s)[^()]*\)/g, '')
    .replace(/\*\*/g, '')
    .replace(/\|/g, '\\|')
    .trim();
  return `| ${when} | ${revision} | ${node} | \`${command}\` | ${headline} |`;
}

/** The file cut into its introduction, its sections of latest runs, and the history table's rows. */
export function parseResults(text: string): { intro: string; latest: string[][]; history: string[] } {
  const historyAt = text.indexOf(`\n${HISTORY_HEADING}\n`);
  const body = historyAt === -1 ? text : text.slice(0, historyAt + 1);
  const history = historyAt === -1 ? [] : text.slice(historyAt).split('\n').filter((line) => line.startsWith('| ') && !HISTORY_HEAD.includes(line));
  const firstSection = body.search(/^## /m);
  const intro = firstSection === -1 ? body.trimEnd() + '\n\n' : body.slice(0, firstSection);
  const sections = firstSection === -1 ? [] : body.slice(firstSection).split(/\n(?=## )/).map((section) => section.trimEnd().split('\n'));
  return { intro, latest: sections, history };
}

export function renderResults(intro: string, latest: readonly (readonly string[])[], history: readonly string[]): string {
  return `${intro}${latest.map((section) => `${section.join('\n').trimEnd()}\n\n`).join('')}${HISTORY_HEADING}\n\n${[...HISTORY_HEAD, ...history].join('\n')}\n`;
}

/**
 * Writes a run's section as the latest of its command (`make bench` or `make soak`), in place of the
 * previous one, and its headline as the newest row of the history table.
 */
export async function recordRun(section: readonly string[], revision = currentRevision(), file = RESULTS_FILE): Promise<void> {
  const { intro, latest, history } = parseResults(await readFile(file, 'utf8'));
  const command = RUN_HEADING.exec(section[0] ?? '')?.[2];
  const others = latest.filter((old) => RUN_HEADING.exec(old[0] ?? '')?.[2] !== command);
  const row = historyRow(section, revision);
  await writeFile(file, renderResults(intro, [section, ...others], row === undefined ? history : [row, ...history]));
}
