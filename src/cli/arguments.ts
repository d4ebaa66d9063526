import { open } from 'node:fs/promises';
import { SITE_ID_FORM } from '../operations/fields.js';

/** A command line that cannot be carried out as typed; the message says what to type instead. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

// The rules several commands share, for `--help`; the forms come from the code that checks them.
export const KEY_ID_FORM = 'the number in the KEY ID column of `sitekey-authz key list <site>`, e.g. 12';
export const SITE_ID_RULE = `the site id: ${SITE_ID_FORM}`;
export const shortText = (maxLength: number) => `at most ${maxLength} characters, no control characters`;

/** The file an option names, read whole; `give` says what to give instead of one that cannot be read. */
export async function readOptionFile(flag: string, path: string, maxBytes: number, give: string, tooLarge: string) {
  let file;
  try {
    file = await open(path, 'r');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new UsageError(`${flag} ${path}: cannot read it (${code}); ${give}`);
  }
  try {
    if ((await file.stat()).size > maxBytes) throw new UsageError(`${flag} ${path} is larger than ${tooLarge}`);
    return await file.readFile('utf8');
  } finally {
    await file.close();
  }
}
