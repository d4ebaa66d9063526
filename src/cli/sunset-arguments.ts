import { canonicalPositiveId } from '../common/positive-id.js';
import { guideUrlProblem } from '../common/sunset-values.js';
import type { NewBrownout, SunsetPolicyChange } from '../store/sunset-admin.js';
import { instantOption, MAX_NOTE, siteIdArgument, textOption, UsageError } from './arguments.js';

/**
 * The rules of the sunset's, brownouts' and audit's values, for the CLI's options and the admin API's
 * fields alike: both refuse the same values with the same words.
 */

export const BROWNOUT_HINT = 'e.g. sitekey-authz brownout add --from 2026-12-01T14:00:00Z --until 2026-12-01T15:00:00Z --site 1001 --dry-run';
export const SUNSET_SET_HINT = 'e.g. sitekey-authz sunset set --at 2027-03-31T00:00:00Z --enforce --guide https://developers.example.com/migrate';

export interface BrownoutTexts {
  readonly from: string | undefined;
  readonly until: string | undefined;
  readonly sites: readonly string[];
  readonly note: string | undefined;
  readonly dryRun: boolean;
}

/** A brownout as typed: `from` is now or a date, `until` after it and in the future, sites that are site ids. */
export function brownoutArguments(texts: BrownoutTexts, now: number): NewBrownout {
  if (texts.from === undefined || texts.until === undefined) throw new UsageError(`--from and --until are both needed; ${BROWNOUT_HINT}`);
  const from = texts.from === 'now' ? new Date(now) : instantOption('from', texts.from);
  const until = instantOption('until', texts.until);
  if (until <= from) throw new UsageError(`--until must be after --from; ${BROWNOUT_HINT}`);
  if (until.getTime() <= now) throw new UsageError(`--until ${texts.until} is in the past: the brownout would never run`);
  const siteIds = [...new Set(texts.sites.map(siteIdArgument))];
  const note = textOption('note', texts.note, MAX_NOTE);
  return { from, until, siteIds: siteIds.length > 0 ? siteIds : null, dryRun: texts.dryRun, note };
}

export function brownoutIdArgument(text: string): string {
  if (canonicalPositiveId(text) === undefined) throw new UsageError(`"${text}" is not a brownout id: expected the number in the ID column of \`sitekey-authz brownout list\``);
  return text;
}

export interface SunsetTexts {
  readonly at: string | undefined;
  /** undefined: unchanged. */
  readonly enforce: boolean | undefined;
  /** A URL, null to remove it, undefined: unchanged. */
  readonly guide: string | null | undefined;
}

/** A change of the sunset policy; at least one thing must change. */
export function sunsetChangeArguments(texts: SunsetTexts): SunsetPolicyChange {
  const problem = typeof texts.guide === 'string' ? guideUrlProblem(texts.guide) : undefined;
  if (problem !== undefined) throw new UsageError(`--guide ${problem}; ${SUNSET_SET_HINT}`);
  const change: SunsetPolicyChange = {
    ...(texts.at === undefined ? {} : { sunsetAt: instantOption('at', texts.at).getTime() }),
    ...(texts.enforce === undefined ? {} : { enforce: texts.enforce }),
    ...(texts.guide === undefined ? {} : { guideUrl: texts.guide }),
  };
  if (Object.keys(change).length === 0) throw new UsageError(`nothing to change: give --at, --enforce, --no-enforce, --guide or --no-guide; ${SUNSET_SET_HINT}`);
  return change;
}

// An action such as key.revoke, site.grace.clear or token-client.add, or its group such as key.
const ACTION = /^[a-z][a-z-]*(\.[a-z-]+)*$/;

export function auditActionArgument(text: string | undefined): string | undefined {
  if (text !== undefined && !ACTION.test(text)) {
    throw new UsageError(`--action "${text}" is not an action name; try --action key.revoke, or --action key for every key change`);
  }
  return text;
}
