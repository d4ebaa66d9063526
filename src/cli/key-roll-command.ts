import type { IssuedKey } from '../store/credential-admin.js';
import { DATE_FORM } from '../operations/fields.js';
import { ROLL_OVERLAP_DAYS, rollKey } from '../operations/key-operations.js';
import { KEY_ID_FORM } from './arguments.js';
import { option, positional, type CommandSpec } from './command.js';

/** What `key issue` and `key roll` print of a new key: the key itself, this once, and how the partner sends it. */
export function newKeyText(key: IssuedKey): string {
  return (
    `  ${key.apiKey}\n\n` +
    'This is the only time the key is shown: hand it to the partner over a secure channel.\n' +
    `The partner sends it as  Authorization: ${key.siteId}:<key>  with the same siteid and apikey in the JSON body.`
  );
}

/** `rules`: the site's and the new key's, as `key issue` words them. */
export function keyRollCommand(rules: Readonly<Record<string, string>>): CommandSpec {
  return {
    name: 'key roll',
    synopsis: '<site> <key-id> [--old-expires ISO] [--expires ISO] [--note T]',
    summary: `issue a new key and print it once; the old key keeps working until --old-expires (default ${ROLL_OVERLAP_DAYS} days)`,
    options: { 'old-expires': { type: 'string' }, expires: { type: 'string' }, note: { type: 'string' } },
    arity: [2, 2],
    rules: {
      '<site>': rules['<site>'] ?? '',
      '<key-id>': `the active key to replace: ${KEY_ID_FORM}`,
      '--old-expires ISO': `when the old key stops being accepted (default: ${ROLL_OVERLAP_DAYS} days from now): ${DATE_FORM}, in the future; an old key that expires sooner keeps its sooner end`,
      ...rules,
    },
    example: 'sitekey-authz key roll 1001 12 --old-expires 2027-01-31 --note "production, rolled"',
    run: async ({ withOperations }, line) => {
      const { result, warnings } = await withOperations((context) =>
        rollKey(context, { siteId: positional(line, 0), keyId: positional(line, 1), oldExpires: option(line, 'old-expires'), expires: option(line, 'expires'), note: option(line, 'note') }),
      );
      const { key, replaced } = result;
      const { siteId } = key;
      return {
        text:
          `issued key ${key.keyId} for site ${siteId} (expires ${key.expiresAt ?? 'never'}), replacing key ${replaced.keyId} (${replaced.maskedKey}), ` +
          `which keeps working until ${replaced.expiresAt}:\n\n${newKeyText(key)}`,
        json: { ...key, replaced: { keyId: replaced.keyId, expiresAt: replaced.expiresAt } },
        warnings,
      };
    },
  };
}
