import { auditDeed } from '../operations/audit-sentences.js';
import { countOf, SITE_ID_FORM } from '../operations/fields.js';
import { AUDIT_DEFAULT_SINCE_DAYS, AUDIT_MAX_SINCE_DAYS, auditEntries } from '../operations/report-operations.js';
import type { AuditEntry } from '../store/audit-log.js';
import { option, type CommandSpec } from './command.js';
import { shortTime, table } from './output.js';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 10_000;

/** Who, in three columns: how the change came (an entry from before the parts shows its one text), subject, e-mail. */
function whoColumns(entry: AuditEntry): [string, string, string] {
  if (entry.actorKind === null || entry.actorSubject === null) return ['as recorded', `"${entry.actor}"`, '-'];
  return [entry.actorKind === 'cli' ? 'CLI' : 'admin port', entry.actorSubject, entry.actorEmail ?? '-'];
}

export const AUDIT_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'audit list',
    changesNothing: true,
    synopsis: '[--site ID] [--since DAYS] [--action NAME] [--limit N]',
    summary: `who changed what and when, newest first (default: the last ${AUDIT_DEFAULT_SINCE_DAYS} days, at most ${DEFAULT_LIMIT} entries)`,
    rules: {
      '--site ID': `only changes of this site: ${SITE_ID_FORM}`,
      '--since DAYS': `how far back, in whole days from 1 to ${AUDIT_MAX_SINCE_DAYS} (default ${AUDIT_DEFAULT_SINCE_DAYS})`,
      '--action NAME':
        'only this action, e.g. key.revoke, site.disable, sunset.set, brownout.add; or a group, e.g. key for key.issue, key.import and key.revoke',
      '--limit N': `at most N entries, from 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT}); the output says when older ones were left out`,
    },
    example: 'sitekey-authz audit list --site 1001 --since 7 --action key',
    run: async ({ withOperations }, line) => {
      const limit = countOf(option(line, 'limit'), 'limit', 'entries', DEFAULT_LIMIT, MAX_LIMIT);
      const { siteId, days, action, entries, more } = await withOperations((context) =>
        auditEntries(context, { site: option(line, 'site'), since: option(line, 'since'), action: option(line, 'action'), limit }),
      );
      const scope = `${siteId === undefined ? '' : ` of site ${siteId}`}${action === undefined ? '' : ` matching ${action}`}`;
      const rows = entries.map((entry) => [shortTime(entry.at), ...whoColumns(entry), entry.action, entry.siteId ?? '-', auditDeed(entry)]);
      const empty = `no changes${scope} in the last ${days} day(s)`;
      return {
        text: table(['AT', 'BY', 'SUBJECT', 'VERIFIED E-MAIL', 'ACTION', 'SITE', 'WHAT'], rows, empty),
        json: entries,
        warnings: more ? [`showing the newest ${limit}; older changes${scope} were left out: give --limit ${Math.min(limit * 10, MAX_LIMIT)} or a shorter --since`] : [],
      };
    },
  },
];
