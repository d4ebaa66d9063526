import { guideUrlProblem } from '../common/sunset-values.js';
import type { BrownoutSummary, SunsetPolicyChange, SunsetPolicySummary } from '../store/sunset-admin.js';
import { configuredSunsetPolicy } from '../store/sunset-policy.js';
import { brownoutIdOf, instantOf, MAX_NOTE, nextYearExample, refuse, siteIdOf, textOf } from './fields.js';
import type { Changed, OperationContext } from './operation-context.js';

const HOUR_MS = 3_600_000;

export function sunsetPolicy({ admin, config }: OperationContext): Promise<SunsetPolicySummary> {
  return admin.sunset.policy(configuredSunsetPolicy(config));
}

/** undefined: unchanged; a null guide removes it. */
export interface SunsetRequest {
  readonly at: string | undefined;
  readonly enforce: boolean | undefined;
  readonly guide: string | null | undefined;
}

function sunsetChangeOf(request: SunsetRequest): SunsetPolicyChange {
  const problem = typeof request.guide === 'string' ? guideUrlProblem(request.guide) : undefined;
  if (problem !== undefined) throw refuse('GUIDE_INVALID', 'guide', problem, 'https://developers.example.com/migrate');
  const change: SunsetPolicyChange = {
    ...(request.at === undefined ? {} : { sunsetAt: instantOf(request.at, 'at').getTime() }),
    ...(request.enforce === undefined ? {} : { enforce: request.enforce }),
    ...(request.guide === undefined ? {} : { guideUrl: request.guide }),
  };
  if (Object.keys(change).length === 0) throw refuse('NOTHING_TO_CHANGE', undefined, 'nothing to change: give the sunset date, whether it is enforced, or the migration guide');
  return change;
}

/** A sunset moved into the past is how an admin retires keys at once: taken, with a word on what it does. */
export async function setSunsetPolicy(context: OperationContext, request: SunsetRequest): Promise<Changed<SunsetPolicySummary>> {
  const change = sunsetChangeOf(request);
  const { policy } = await context.admin.sunset.setPolicy(change, configuredSunsetPolicy(context.config));
  const past = Date.parse(policy.sunsetAt) <= context.now;
  const warnings =
    change.sunsetAt !== undefined && past
      ? [`the sunset ${policy.sunsetAt} is in the past: ${policy.enforce ? 'API keys are refused (105) from now on' : 'API keys will be refused at once when it is enforced'}, except for sites with grace`]
      : [];
  return { result: policy, warnings };
}

export interface BrownoutRequest {
  readonly from: string | undefined;
  readonly until: string | undefined;
  /** undefined (never an empty list) for every site. */
  readonly sites: readonly string[] | undefined;
  readonly note: string | undefined;
  readonly dryRun: boolean;
}

export async function addBrownout({ admin, now }: OperationContext, request: BrownoutRequest): Promise<BrownoutSummary> {
  const tomorrow = new Date(now + 24 * HOUR_MS).toISOString().slice(0, 10);
  if (request.from === undefined) throw refuse('DATE_MISSING', 'from', 'is needed: now, or a date', `now or ${tomorrow}T14:00:00Z`);
  if (request.until === undefined) throw refuse('DATE_MISSING', 'until', 'is needed: a date after the start', `${tomorrow}T15:00:00Z`);
  const from = request.from === 'now' ? new Date(now) : instantOf(request.from, 'from');
  const until = instantOf(request.until, 'until');
  if (until <= from) throw refuse('UNTIL_NOT_AFTER_FROM', 'until', `${request.until} is not after the start ${from.toISOString()}: a brownout ends after it starts`, new Date(from.getTime() + HOUR_MS).toISOString());
  if (until.getTime() <= now) throw refuse('DATE_IN_PAST', 'until', `${request.until} is in the past: the brownout would never run; give an end after now`, nextYearExample(now));
  if (request.sites?.length === 0) throw refuse('SITES_EMPTY', 'sites', 'must not be an empty list: name the sites, or leave the field out for a brownout of every site', '1001');
  const siteIds = [...new Set((request.sites ?? []).map((site) => siteIdOf(site, 'sites')))];
  const note = textOf(request.note, 'note', MAX_NOTE);
  return admin.sunset.addBrownout({ from, until, siteIds: siteIds.length > 0 ? siteIds : null, dryRun: request.dryRun, note });
}

export async function cancelBrownout({ admin }: OperationContext, request: { brownoutId: string | undefined }) {
  return admin.sunset.cancelBrownout(brownoutIdOf(request.brownoutId));
}
