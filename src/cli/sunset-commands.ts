import { OVERFLOW_ADDRESS } from '../store/denial-stats-recorder.js';
import type { BrownoutSummary, SunsetPolicySummary } from '../store/sunset-admin.js';
import type { DenialReportRow, MigrationKeyRow, MigrationSiteRow } from '../store/sunset-reports.js';
import { MAX_NOTE, SITE_ID_FORM } from '../operations/fields.js';
import { countsBeginLateWarning, DENIAL_REPORT_ROWS, denialReport, MAX_REPORT_ROWS, MAX_SINCE_DAYS, MAX_SINCE_HOURS, migrationReport } from '../operations/report-operations.js';
import { setGrace } from '../operations/site-operations.js';
import { addBrownout, cancelBrownout, setSunsetPolicy, sunsetPolicy } from '../operations/sunset-operations.js';
import { shortText, SITE_ID_RULE, UsageError } from './arguments.js';
import { flag, option, options, type CommandLine, type CommandSpec } from './command.js';
import { shortTime, table, type CommandOutput } from './output.js';

const BROWNOUT_EXAMPLE = 'sitekey-authz brownout add --from 2026-12-01T14:00:00Z --until 2026-12-01T15:00:00Z --site 1001 --dry-run';

// A spreadsheet runs a cell that starts with one of these as a formula (=HYPERLINK(…), @SUM(1)):
// OWASP's CSV-injection rule puts a ' before it, which the spreadsheet shows as text.
const FORMULA_START = /^[=+\-@\t\r]/;

/** RFC 4180 fields: quoted when they hold a comma, a quote or a line break; never read as a formula. */
function csv(headings: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number | boolean | null>>): string {
  const field = (value: string | number | boolean | null) => {
    const raw = value === null ? '' : String(value);
    const textValue = typeof value === 'string' && FORMULA_START.test(raw) ? `'${raw}` : raw;
    return /[",\r\n]/.test(textValue) ? `"${textValue.replaceAll('"', '""')}"` : textValue;
  };
  return [headings, ...rows].map((row) => row.map(field).join(',')).join('\n');
}

/** A report as a table for people, --csv with fixed columns for spreadsheets, --json for scripts. */
function report<T>(
  line: CommandLine,
  rows: readonly T[],
  columns: ReadonlyArray<readonly [heading: string, csvName: string, value: (row: T) => string | number | boolean | null, shown?: (row: T) => string]>,
  empty: string,
): CommandOutput {
  const asCsv = csv(columns.map(([, name]) => name), rows.map((row) => columns.map(([, , value]) => value(row))));
  const cell = (row: T) => columns.map(([, , value, shown]) => (shown ? shown(row) : String(value(row) ?? '-')));
  const cells = rows.map(cell);
  const asTable = table(columns.map(([heading]) => heading), cells, empty);
  return { text: flag(line, 'csv') ? asCsv : asTable, json: rows };
}

/** "and N more addresses" for each site, summed over its 'other' rows. */
function overflowNotes(rows: readonly DenialReportRow[]): string[] {
  const bySite = new Map<string, { addresses: number; count: number }>();
  for (const row of rows.filter((one) => one.clientIp === OVERFLOW_ADDRESS)) {
    const site = row.siteId ?? 'unknown (all)';
    const sum = bySite.get(site) ?? { addresses: 0, count: 0 };
    bySite.set(site, { addresses: sum.addresses + row.moreAddresses, count: sum.count + row.count });
  }
  return [...bySite].map(([site, more]) => `site ${site}: and ${more.addresses} more addresses (${more.count} refusals)`);
}

const sites = (brownout: BrownoutSummary) => (brownout.siteIds === null ? 'all' : brownout.siteIds.join(' '));

const CSV_RULE = "a cell that starts with =, +, -, @, a tab or a carriage return gets a leading ' so that it is not run as a formula";

function policyText(policy: SunsetPolicySummary): string {
  const source =
    policy.source === 'database'
      ? `stored in the database (changed ${policy.updatedAt ?? '-'}); every replica follows it, whatever its environment`
      : 'from this environment (APIKEY_SUNSET_AT, APIKEY_SUNSET_ENFORCE, MIGRATION_GUIDE_URL): the database holds none yet; serve stores it at start, or `sitekey-authz sunset set`';
  return [
    `sunset:   ${policy.sunsetAt}`,
    `enforce:  ${policy.enforce ? 'yes: valid API keys are refused (105) from the sunset on, except sites with grace' : 'no: API keys keep working after the sunset'}`,
    `guide:    ${policy.guideUrl ?? '- (105 messages and Link headers name none)'}`,
    `source:   ${source}`,
  ].join('\n');
}

export const SUNSET_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'sunset show',
    changesNothing: true,
    summary: 'the sunset policy every process follows: the date API keys retire, whether that is enforced, and the migration guide',
    example: 'sitekey-authz sunset show --json',
    run: async ({ withOperations }) => {
      const policy = await withOperations(sunsetPolicy);
      return { text: policyText(policy), json: policy };
    },
  },
  {
    name: 'sunset set',
    synopsis: '[--at ISO] [--enforce | --no-enforce] [--guide URL | --no-guide]',
    summary: 'change the sunset policy in the database; every replica follows within a second (audited as sunset.set)',
    rules: {
      '--at ISO': 'when API keys retire: an ISO 8601 date (midnight UTC) or date-time with a zone, on a day the calendar has (2026-02-30 is refused)',
      '--enforce, --no-enforce': 'refuse valid API keys with 105 from the sunset on (sites with grace pass), or only announce it in headers',
      '--guide URL, --no-guide': 'the migration guide named in 105 messages and Link headers: an https:// URL of printable ASCII, no spaces, quotes, < or >; --no-guide removes it',
    },
    example: 'sitekey-authz sunset set --at 2027-03-31T00:00:00Z --enforce --guide https://developers.example.com/migrate',
    run: async ({ withOperations }, line) => {
      const guide = option(line, 'guide');
      if (flag(line, 'enforce') && flag(line, 'no-enforce')) throw new UsageError('give --enforce or --no-enforce, not both');
      if (guide !== undefined && flag(line, 'no-guide')) throw new UsageError('give --guide URL or --no-guide, not both');
      const request = {
        at: option(line, 'at'),
        enforce: flag(line, 'enforce') ? true : flag(line, 'no-enforce') ? false : undefined,
        guide: guide ?? (flag(line, 'no-guide') ? null : undefined),
      };
      if (request.at === undefined && request.enforce === undefined && request.guide === undefined) {
        throw new UsageError('nothing to change: give --at, --enforce, --no-enforce, --guide or --no-guide; e.g. sitekey-authz sunset set --at 2027-03-31T00:00:00Z --enforce');
      }
      const { result: policy, warnings } = await withOperations((context) => setSunsetPolicy(context, request));
      return { text: `${policyText(policy)}\nEvery replica follows it within a second.`, json: policy, warnings };
    },
  },
  {
    name: 'site grace',
    synopsis: '<id> --until ISO | --clear',
    summary: 'let a site keep its API keys through brownouts and the sunset until a date, or take that back',
    rules: {
      '<id>': SITE_ID_RULE,
      '--until ISO': 'until when: an ISO 8601 date (midnight UTC) or date-time with a zone, on a day the calendar has, in the future',
      '--clear': 'take the grace back: the site follows brownouts and the sunset again',
    },
    example: 'sitekey-authz site grace 1001 --until 2027-03-31',
    run: async ({ withOperations }, line) => {
      const untilText = option(line, 'until');
      const clear = flag(line, 'clear');
      if ((untilText === undefined) === !clear) {
        throw new UsageError(`give exactly one of --until and --clear: sitekey-authz site grace ${line.positionals[0] ?? '<id>'} --until 2027-03-31, or --clear`);
      }
      const result = await withOperations((context) => setGrace(context, { siteId: line.positionals[0], until: untilText ?? null }));
      const { siteId } = result;
      return {
        text: result.graceUntil
          ? `site ${siteId} keeps API-key access through brownouts and the sunset until ${result.graceUntil}`
          : `site ${siteId} has no grace any more${result.previous ? ` (it had until ${result.previous})` : ''}`,
        json: result,
      };
    },
  },
  {
    name: 'brownout add',
    synopsis: '--from ISO --until ISO [--site ID ...] [--note T] [--dry-run]',
    summary: 'refuse API-key requests (error 105) for a while, for the named sites or all; --dry-run only counts them',
    rules: {
      '--from ISO|now': 'when it starts: now, or an ISO 8601 date (midnight UTC) or date-time with a zone',
      '--until ISO': 'when it ends (exclusive), after --from and in the future; same forms',
      '--site ID ...': `only these sites (repeat --site; default every site): ${SITE_ID_FORM}`,
      '--note T': `for the record, shown in \`brownout list\`; ${shortText(MAX_NOTE)}`,
      '--dry-run': 'refuse nobody: log and count (report denials, "105 (dry run)") whom it would refuse',
    },
    example: BROWNOUT_EXAMPLE,
    run: async ({ withOperations }, line) => {
      const dryRun = flag(line, 'dry-run');
      const named = options(line, 'site');
      const request = { from: option(line, 'from'), until: option(line, 'until'), sites: named.length === 0 ? undefined : named, note: option(line, 'note'), dryRun };
      const brownout = await withOperations((context) => addBrownout(context, request));
      return {
        text:
          `added brownout ${brownout.brownoutId}${dryRun ? ' (dry run: refuses nobody, counts who would be refused)' : ''}: ` +
          `${brownout.siteIds === null ? 'every site' : `site(s) ${sites(brownout)}`} from ${brownout.from} until ${brownout.until}.\n` +
          `Sites with grace pass. Cancel it with \`sitekey-authz brownout cancel ${brownout.brownoutId}\``,
        json: brownout,
      };
    },
  },
  {
    name: 'brownout list',
    changesNothing: true,
    summary: 'brownouts, scheduled, running, over and cancelled',
    example: 'sitekey-authz brownout list --json',
    run: async ({ withOperations }) => {
      const brownouts = await withOperations(({ admin }) => admin.sunset.listBrownouts());
      const rows = brownouts.map((b) => {
        const times = [shortTime(b.from), shortTime(b.until)];
        return [b.brownoutId, b.state, ...times, sites(b), b.dryRun ? 'dry run' : 'refuse', b.note];
      });
      const empty = `no brownouts; schedule one with ${BROWNOUT_EXAMPLE}`;
      return { text: table(['ID', 'STATE', 'FROM', 'UNTIL', 'SITES', 'MODE', 'NOTE'], rows, empty), json: brownouts };
    },
  },
  {
    name: 'brownout cancel',
    synopsis: '<id>',
    summary: 'call a brownout off; every replica lets requests through again within a second',
    rules: { '<id>': 'the number in the ID column of `sitekey-authz brownout list`, e.g. 3' },
    example: 'sitekey-authz brownout cancel 3',
    run: async ({ withOperations }, line) => {
      const { brownout, changed } = await withOperations((context) => cancelBrownout(context, { brownoutId: line.positionals[0] }));
      const { brownoutId } = brownout;
      return {
        text: changed ? `cancelled brownout ${brownoutId}` : `brownout ${brownoutId} was already cancelled at ${brownout.cancelledAt}`,
        json: { ...brownout, changed },
      };
    },
  },
  {
    name: 'report migration',
    changesNothing: true,
    synopsis: '[--since DAYS] [--sites] [--csv]',
    summary: 'sites that used an API key in the window (default 30 days) with days left; --sites: each site\'s share on tokens and whether it can go tokens-only',
    rules: {
      '--since DAYS': `keys used in the last DAYS days, a whole number from 1 to ${MAX_SINCE_DAYS} (default 30)`,
      '--csv': `fixed columns for a spreadsheet; ${CSV_RULE}`,
    },
    example: 'sitekey-authz report migration --since 60 --csv > migration.csv',
    run: async ({ withOperations }, line) => {
      const migration = await withOperations((context) => migrationReport(context, { since: option(line, 'since'), sites: flag(line, 'sites') }));
      const { days } = migration;
      if (migration.sites) {
        const { countsBeginLate } = migration;
        const countsShort = countsBeginLate === undefined ? [] : [countsBeginLateWarning(shortTime(countsBeginLate), shortTime(migration.since.toISOString()))];
        const output = report<MigrationSiteRow>(
          line,
          migration.rows,
          [
            ['SITE', 'site_id', (r) => r.siteId],
            ['NAME', 'site_name', (r) => r.siteName],
            ['METHOD', 'auth_method', (r) => r.authMethod],
            ['TOKEN REQS', 'token_requests', (r) => r.tokenRequests],
            ['KEY REQS', 'key_requests', (r) => r.keyRequests],
            ['ON TOKENS', 'token_share', (r) => r.tokenShare, (r) => (r.tokenShare === null ? '-' : `${(r.tokenShare * 100).toFixed(1)} %`)],
            ['LAST TOKEN USE', 'last_token_use_at', (r) => r.lastTokenUseAt, (r) => shortTime(r.lastTokenUseAt)],
            ['LAST KEY USE', 'last_key_use_at', (r) => r.lastKeyUseAt, (r) => shortTime(r.lastKeyUseAt)],
            ['CLIENTS', 'token_clients', (r) => r.tokenClients],
            ['TOKENS-ONLY REFUSES', 'would_refuse_on_tokens', (r) => r.wouldRefuseOnTokens, (r) => (r.wouldRefuseOnTokens ? 'yes: keys in use' : 'no')],
            ['CUT-OFF', 'cutoff_at', (r) => r.cutoffAt, (r) => shortTime(r.cutoffAt)],
            ['DAYS LEFT', 'days_left', (r) => r.daysLeft],
          ],
          `no site sent a request, used an API key or a token in the last ${days} day(s)`,
        );
        return { ...output, warnings: countsShort };
      }
      return report<MigrationKeyRow>(
        line,
        migration.rows,
        [
          ['SITE', 'site_id', (r) => r.siteId],
          ['NAME', 'site_name', (r) => r.siteName],
          ['KEY ID', 'key_id', (r) => r.keyId],
          ['KEY', 'masked_key', (r) => r.maskedKey],
          ['LAST USED', 'last_used_at', (r) => r.lastUsedAt, (r) => shortTime(r.lastUsedAt)],
          ['GRACE UNTIL', 'grace_until', (r) => r.graceUntil, (r) => shortTime(r.graceUntil)],
          ['CUT-OFF', 'cutoff_at', (r) => r.cutoffAt, (r) => shortTime(r.cutoffAt)],
          ['DAYS LEFT', 'days_left', (r) => r.daysLeft],
        ],
        `no site used an API key in the last ${days} day(s)`,
      );
    },
  },
  {
    name: 'report denials',
    changesNothing: true,
    synopsis: '[--site ID] [--since HOURS] [--limit ROWS] [--csv]',
    summary: 'refusals of known sites by error and client address (default: last 24 hours, the 100 largest counts), with counts and first and last seen',
    rules: {
      '--site ID': `only this site, which must exist: ${SITE_ID_FORM}; refusals of unknown or disabled sites (101) are counted together, without --site`,
      '--since HOURS': `refusals in the last HOURS hours, a whole number from 1 to ${MAX_SINCE_HOURS} (default 24)`,
      '--limit ROWS': `the rows with the most refusals shown, from 1 to ${MAX_REPORT_ROWS} (default ${DENIAL_REPORT_ROWS}); each site's overflow is summed as "and N more addresses"`,
      '--csv': `fixed columns for a spreadsheet; ${CSV_RULE}`,
    },
    example: 'sitekey-authz report denials --site 1001 --since 48 --limit 20',
    run: async ({ withOperations }, line) => {
      const { siteId, hours, limit, rows, omittedRows } = await withOperations((context) =>
        denialReport(context, { site: option(line, 'site'), since: option(line, 'since'), limit: option(line, 'limit') }),
      );
      const addressed = rows.filter((row) => row.clientIp !== OVERFLOW_ADDRESS);
      const output = report<DenialReportRow>(
        line,
        flag(line, 'csv') ? rows : addressed,
        [
          ['SITE', 'site_id', (r) => r.siteId, (r) => r.siteId ?? 'unknown (all)'],
          ['ERROR', 'error_id', (r) => r.errorId, (r) => (r.rehearsal ? `${r.errorId} (dry run)` : r.shadow ? `${r.errorId} (shadow)` : String(r.errorId))],
          ['CLIENT IP', 'client_ip', (r) => r.clientIp],
          ['DRY RUN', 'rehearsal', (r) => r.rehearsal, (r) => (r.rehearsal ? 'yes' : 'no')],
          ['COUNT', 'count', (r) => r.count],
          ['FIRST SEEN', 'first_seen', (r) => r.firstSeen, (r) => shortTime(r.firstSeen)],
          ['LAST SEEN', 'last_seen', (r) => r.lastSeen, (r) => shortTime(r.lastSeen)],
          // Last, so that the columns scripts already read keep their places.
          ['SHADOW', 'shadow', (r) => r.shadow, (r) => (r.shadow ? 'yes: let through' : 'no')],
        ],
        `no refusals${siteId ? ` of site ${siteId}` : ''} in the last ${hours} hour(s)`,
      );
      if (flag(line, 'csv')) return { ...output, json: rows };
      const notes = overflowNotes(rows);
      if (omittedRows > 0) notes.push(`and ${omittedRows} more rows with fewer refusals; show them with --limit ${Math.min(MAX_REPORT_ROWS, limit + omittedRows)}`);
      const shown = addressed.length === 0 && notes.length > 0 ? '' : output.text;
      return { text: [shown, ...notes].filter((part) => part !== '').join('\n'), json: rows };
    },
  },
];
