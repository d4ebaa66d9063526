/** A command line that cannot be carried out as typed; the message says what to type instead. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

// The forms of the arguments that only the CLI names this way, for `--help`; the operations
// (src/operations/fields.ts) hold the rules and the forms every transport shares.
export const KEY_ID_FORM = 'the number in the KEY ID column of `sitekey-authz key list <site>`, e.g. 12';
