import { COUNTS_BEGIN_WHY } from '../store/sunset-reports.js';
import { blockedPartnerReport } from './blocked-partner-report.js';
import { clientIdOf, countOf, instantOf, refuse, siteIdOf, textOf } from './fields.js';
import type { OperationContext } from './operation-context.js';
import { sunsetPolicy } from './sunset-operations.js';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
export const MAX_SINCE_DAYS = 3_650;
export const MAX_SINCE_HOURS = 24 * 3_650;
const MIGRATION_DEFAULT_SINCE_DAYS = 30;
const DENIAL_DEFAULT_SINCE_HOURS = 24;
/** The denial report shows this many rows unless asked otherwise; a storm must not flood a screen. */
export const DENIAL_REPORT_ROWS = 100;
export const MAX_REPORT_ROWS = 100_000;
export const AUDIT_MAX_SINCE_DAYS = 3_650;
export const AUDIT_DEFAULT_SINCE_DAYS = 30;

const optionalSite = (text: string | undefined, field: string) => (text === undefined ? undefined : siteIdOf(text, field));

/** Keys used in the window with days left; `sites`: each site's share on tokens and whether it can go tokens-only. */
export async function migrationReport(context: OperationContext, request: { since: string | undefined; sites: boolean }) {
  const { admin, now } = context;
  const days = countOf(request.since, 'since', 'days', MIGRATION_DEFAULT_SINCE_DAYS, MAX_SINCE_DAYS);
  const since = new Date(now - days * DAY_MS);
  // The sunset the service follows: the database's, not this process's environment.
  const sunsetAt = Date.parse((await sunsetPolicy(context)).sunsetAt);
  if (!request.sites) return { days, since, sites: false as const, rows: await admin.sunsetReports.migrationReport(since, sunsetAt, now) };
  const report = await admin.sunsetReports.migrationSiteReport(since, sunsetAt, now);
  return { days, since, sites: true as const, ...report };
}

export function countsBeginLateWarning(countsBeginLate: string, since: string): string {
  return `the oldest request counts held are from ${countsBeginLate}: token requests, key requests and the share on tokens count from then, not from ${since} (${COUNTS_BEGIN_WHY})`;
}

export async function denialReport({ admin, now }: OperationContext, request: { site: string | undefined; since: string | undefined; limit: string | undefined }) {
  const siteId = optionalSite(request.site, 'site');
  const hours = countOf(request.since, 'since', 'hours', DENIAL_DEFAULT_SINCE_HOURS, MAX_SINCE_HOURS);
  const limit = countOf(request.limit, 'limit', 'rows', DENIAL_REPORT_ROWS, MAX_REPORT_ROWS);
  const report = await admin.sunsetReports.denialReport(new Date(now - hours * HOUR_MS), siteId, limit);
  return { siteId, hours, limit, ...report };
}

/** "A partner says they are blocked": the refusals of a site or a token client, each with why and what next. */
export async function blockedPartner(context: OperationContext, request: { site: string | undefined; client: string | undefined; since: string | undefined; limit: string | undefined }) {
  const siteId = optionalSite(request.site, 'site');
  const clientId = request.client === undefined ? undefined : clientIdOf(request.client, 'client');
  const hours = countOf(request.since, 'since', 'hours', DENIAL_DEFAULT_SINCE_HOURS, MAX_SINCE_HOURS);
  const limit = countOf(request.limit, 'limit', 'rows', DENIAL_REPORT_ROWS, MAX_REPORT_ROWS);
  const { sunsetAt } = await sunsetPolicy(context);
  return blockedPartnerReport(context.admin, { since: new Date(context.now - hours * HOUR_MS), siteId, clientId, limit, sunsetAt, audience: context.config.tokens?.audience });
}

// An action such as key.revoke, site.grace.clear or token-client.add, or its group such as key.
const ACTION = /^[a-z][a-z-]*(\.[a-z-]+)*$/;

function auditActionOf(text: string | undefined): string | undefined {
  if (text !== undefined && !ACTION.test(text)) throw refuse('ACTION_INVALID', 'action', `${JSON.stringify(text.slice(0, 64))} is not an action name; give an action, or its group for every change of that kind`, 'key.revoke or key');
  return text;
}

/** `actor`: the actor or a part of it such as an e-mail; an `until` that is a date alone takes in that whole day. */
export interface AuditRequest {
  readonly site: string | undefined;
  readonly since: string | undefined;
  readonly action: string | undefined;
  readonly actor?: string | undefined;
  readonly from?: string | undefined;
  readonly until?: string | undefined;
  readonly limit: number;
  /** The id of the last entry of the previous page. */
  readonly beforeId?: string;
}

const MAX_ACTOR_FILTER = 200;

function auditUntilOf(text: string | undefined): Date | undefined {
  const trimmed = text?.trim();
  if (trimmed === undefined || trimmed === '') return undefined;
  const at = instantOf(trimmed, 'until');
  return /^\d{4}-\d{2}-\d{2}$/.test(trimmed) ? new Date(at.getTime() + DAY_MS) : at;
}

export async function auditEntries({ admin, now }: OperationContext, request: AuditRequest) {
  const siteId = optionalSite(request.site, 'site');
  const days = countOf(request.since, 'since', 'days', AUDIT_DEFAULT_SINCE_DAYS, AUDIT_MAX_SINCE_DAYS);
  const action = auditActionOf(request.action);
  const actor = textOf(request.actor?.trim(), 'actor', MAX_ACTOR_FILTER) || undefined;
  const from = request.from?.trim() ? instantOf(request.from.trim(), 'from') : undefined;
  const until = auditUntilOf(request.until);
  if (from !== undefined && until !== undefined && until <= from) throw refuse('UNTIL_NOT_AFTER_FROM', 'until', 'must be after the start of the period', '2026-11-30');
  const { entries, more } = await admin.auditLog.list({
    since: from ?? new Date(now - days * DAY_MS),
    ...(until === undefined ? {} : { until }),
    ...(actor === undefined ? {} : { actor }),
    siteId,
    action,
    limit: request.limit,
    ...(request.beforeId === undefined ? {} : { beforeId: request.beforeId }),
  });
  return { siteId, days, action, entries, more };
}
