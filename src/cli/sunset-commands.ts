import { OVERFLOW_ADDRESS } from '../store/denial-stats-recorder.js';
import type { BrownoutSummary, DenialReportRow, MigrationKeyRow } from '../store/sunset-admin.js';
import { countOption, instantOption, siteIdArgument, textOption, UsageError } from './arguments.js';
import type { Command, CommandLine } from './commands.js';
import { shortTime, table, type CommandOutput } from './output.js';

const MAX_NOTE = 500;
const MAX_SINCE_DAYS = 3_650;
const MAX_SINCE_HOURS = 24 * 3_650;
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const BROWNOUT_ID = /^[1-9][0-9]{0,18}$/;
/** `report denials` prints this many rows unless --limit says otherwise; a storm must not flood a terminal. */
const DENIAL_REPORT_ROWS = 100;
const MAX_REPORT_ROWS = 100_000;

const text = (line: CommandLine, name: string): string | undefined => {
  const value = line.options[name];
  return typeof value === 'string' ? value : undefined;
};
const texts = (line: CommandLine, name: string): string[] => {
  const value = line.options[name];
  return Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
};

/** RFC 4180 fields: quoted when they hold a comma, a quote or a line break. */
function csv(headings: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number | boolean | null>>): string {
  const field = (value: string | number | boolean | null) => {
    const textValue = value === null ? '' : String(value);
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
  const asTable =
    rows.length === 0
      ? empty
      : table(columns.map(([heading]) => heading), rows.map((row) => columns.map(([, , value, shown]) => (shown ? shown(row) : String(value(row) ?? '-')))));
  return { text: line.options.csv === true ? asCsv : asTable, json: rows };
}

/** Per site, the addresses and refusals its 'other' rows stand for. */
function overflowBySite(rows: readonly DenialReportRow[]): Map<string, { addresses: number; count: number }> {
  const bySite = new Map<string, { addresses: number; count: number }>();
  for (const row of rows) {
    if (row.clientIp !== OVERFLOW_ADDRESS) continue;
    const sum = bySite.get(row.siteId) ?? { addresses: 0, count: 0 };
    sum.addresses += row.moreAddresses;
    sum.count += row.count;
    bySite.set(row.siteId, sum);
  }
  return bySite;
}

const sites = (brownout: BrownoutSummary) => (brownout.siteIds === null ? 'all' : brownout.siteIds.join(' '));

const BROWNOUT_HINT = 'e.g. sitekey-authz brownout add --from 2026-12-01T14:00:00Z --until 2026-12-01T15:00:00Z --site 1001 --dry-run';

/** Issue #11: grace, brownouts and the reports of the API-key sunset. */
export const SUNSET_COMMANDS: readonly Command[] = [
  {
    name: 'site grace',
    synopsis: '<id> --until ISO | --clear',
    summary: 'let a site keep its API keys through brownouts and the sunset until a date, or take that back',
    options: { until: { type: 'string' }, clear: { type: 'boolean' } },
    arity: [1, 1],
    run: async ({ withAdmin }, line) => {
      const siteId = siteIdArgument(line.positionals[0] ?? '');
      const untilText = text(line, 'until');
      const clear = line.options.clear === true;
      if ((untilText === undefined) === !clear) {
        throw new UsageError(`give exactly one of --until and --clear: sitekey-authz site grace ${siteId} --until 2027-03-31, or --clear`);
      }
      const until = untilText === undefined ? null : instantOption('until', untilText);
      const result = await withAdmin((admin) => admin.sunset.setGrace(siteId, until));
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
    options: { from: { type: 'string' }, until: { type: 'string' }, site: { type: 'string', multiple: true }, note: { type: 'string' }, 'dry-run': { type: 'boolean' } },
    arity: [0, 0],
    run: async ({ withAdmin, now }, line) => {
      const fromText = text(line, 'from');
      const untilText = text(line, 'until');
      if (fromText === undefined || untilText === undefined) throw new UsageError(`--from and --until are both needed; ${BROWNOUT_HINT}`);
      const from = instantOption('from', fromText);
      const until = instantOption('until', untilText);
      if (until <= from) throw new UsageError(`--until must be after --from; ${BROWNOUT_HINT}`);
      if (until.getTime() <= now) throw new UsageError(`--until ${untilText} is in the past: the brownout would never run`);
      const siteIds = [...new Set(texts(line, 'site').map(siteIdArgument))];
      const note = textOption('note', text(line, 'note'), MAX_NOTE);
      const dryRun = line.options['dry-run'] === true;
      const brownout = await withAdmin((admin) => admin.sunset.addBrownout({ from, until, siteIds: siteIds.length > 0 ? siteIds : null, dryRun, note }));
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
    synopsis: '',
    summary: 'brownouts, scheduled, running, over and cancelled',
    options: {},
    arity: [0, 0],
    run: async ({ withAdmin }) => {
      const brownouts = await withAdmin((admin) => admin.sunset.listBrownouts());
      return {
        text:
          brownouts.length === 0
            ? `no brownouts; schedule one with ${BROWNOUT_HINT.slice('e.g. '.length)}`
            : table(
                ['ID', 'STATE', 'FROM', 'UNTIL', 'SITES', 'MODE', 'NOTE'],
                brownouts.map((b) => [b.brownoutId, b.state, shortTime(b.from), shortTime(b.until), sites(b), b.dryRun ? 'dry run' : 'refuse', b.note]),
              ),
        json: brownouts,
      };
    },
  },
  {
    name: 'brownout cancel',
    synopsis: '<id>',
    summary: 'call a brownout off; every replica lets requests through again within a second',
    options: {},
    arity: [1, 1],
    run: async ({ withAdmin }, line) => {
      const brownoutId = line.positionals[0] ?? '';
      if (!BROWNOUT_ID.test(brownoutId)) throw new UsageError(`"${brownoutId}" is not a brownout id: expected the number in the ID column of \`sitekey-authz brownout list\``);
      const { brownout, changed } = await withAdmin((admin) => admin.sunset.cancelBrownout(brownoutId));
      return {
        text: changed ? `cancelled brownout ${brownoutId}` : `brownout ${brownoutId} was already cancelled at ${brownout.cancelledAt}`,
        json: { ...brownout, changed },
      };
    },
  },
  {
    name: 'report migration',
    synopsis: '[--since DAYS] [--csv]',
    summary: 'sites that used an API key in the window (default 30 days), most recently active first, with days left',
    options: { since: { type: 'string' }, csv: { type: 'boolean' } },
    arity: [0, 0],
    run: async ({ withAdmin, now, config }, line) => {
      const days = countOption('since', text(line, 'since'), 'days', 30, MAX_SINCE_DAYS);
      const rows = await withAdmin((admin) => admin.sunset.migrationReport(new Date(now - days * DAY_MS), config.apiKeySunsetAt, now));
      return report<MigrationKeyRow>(
        line,
        rows,
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
    synopsis: '[--site ID] [--since HOURS] [--limit ROWS] [--csv]',
    summary: 'refusals of known sites by error and client address (default: last 24 hours, the 100 largest counts), with counts and first and last seen',
    options: { site: { type: 'string' }, since: { type: 'string' }, limit: { type: 'string' }, csv: { type: 'boolean' } },
    arity: [0, 0],
    run: async ({ withAdmin, now }, line) => {
      const siteText = text(line, 'site');
      const siteId = siteText === undefined ? undefined : siteIdArgument(siteText);
      const hours = countOption('since', text(line, 'since'), 'hours', 24, MAX_SINCE_HOURS);
      const limit = countOption('limit', text(line, 'limit'), 'rows', DENIAL_REPORT_ROWS, MAX_REPORT_ROWS);
      const { rows, omittedRows } = await withAdmin((admin) => admin.sunset.denialReport(new Date(now - hours * HOUR_MS), siteId, limit));
      const addressed = rows.filter((row) => row.clientIp !== OVERFLOW_ADDRESS);
      const output = report<DenialReportRow>(
        line,
        line.options.csv === true ? rows : addressed,
        [
          ['SITE', 'site_id', (r) => r.siteId],
          ['ERROR', 'error_id', (r) => r.errorId, (r) => (r.rehearsal ? `${r.errorId} (dry run)` : String(r.errorId))],
          ['CLIENT IP', 'client_ip', (r) => r.clientIp],
          ['DRY RUN', 'rehearsal', (r) => r.rehearsal, (r) => (r.rehearsal ? 'yes' : 'no')],
          ['COUNT', 'count', (r) => r.count],
          ['FIRST SEEN', 'first_seen', (r) => r.firstSeen, (r) => shortTime(r.firstSeen)],
          ['LAST SEEN', 'last_seen', (r) => r.lastSeen, (r) => shortTime(r.lastSeen)],
        ],
        `no refusals${siteId ? ` of site ${siteId}` : ''} in the last ${hours} hour(s)`,
      );
      if (line.options.csv === true) return { ...output, json: rows };
      const notes = [...overflowBySite(rows)].map(
        ([site, more]) => `site ${site}: and ${more.addresses} more addresses (${more.count} refusals)`,
      );
      if (omittedRows > 0) notes.push(`and ${omittedRows} more rows with fewer refusals; show them with --limit ${Math.min(MAX_REPORT_ROWS, limit + omittedRows)}`);
      const shown = addressed.length === 0 && notes.length > 0 ? '' : output.text;
      return { text: [shown, ...notes].filter((part) => part !== '').join('\n'), json: rows };
    },
  },
];
