import { open } from 'node:fs/promises';

/** A command line that cannot be carried out as typed; the message says what to type instead. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const KEY_ID_FORM = 'the number in the KEY ID column of `sitekey-authz key list <site>`, e.g. 12';

/** A file named by an option, read whole; `unreadable` words the error code of one that cannot be opened. */
export async function readOptionFile(
  path: string,
  maxBytes: number,
  unreadable: (code: string) => string,
  tooLarge: string,
): Promise<string> {
  let file;
  try {
    file = await open(path, 'r');
  } catch (error) {
    throw new UsageError(unreadable((error as NodeJS.ErrnoException).code ?? String(error)));
  }
  try {
    if ((await file.stat()).size > maxBytes) throw new UsageError(tooLarge);
    return await file.readFile('utf8');
  } finally {
    await file.close();
  }
}
