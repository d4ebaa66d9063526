import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

export const RESULTS_FILE = fileURLToPath(new URL('../../bench/RESULTS.md', import.meta.url));

/** Puts a new section above the older ones (after the file's title and introduction), keeping them all. */
export async function prependSection(section: readonly string[]): Promise<void> {
  const current = await readFile(RESULTS_FILE, 'utf8');
  const firstSection = current.search(/^## /m);
  const [head, rest] = firstSection === -1 ? [current.trimEnd() + '\n\n', ''] : [current.slice(0, firstSection), current.slice(firstSection)];
  await writeFile(RESULTS_FILE, `${head}${section.join('\n').trimEnd()}\n\n${rest}`);
}
