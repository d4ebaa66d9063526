import { ERROR_CATALOGUE } from '../decision/error-catalogue.js';
import type { ErrorId, SiteId } from '../decision/types.js';
import type { SiteStanding } from '../store/refusal-facts.js';
import { COUNTS_BEGIN_WHY } from '../store/sunset-reports.js';
import { clientIdOf, countOf, instantOf, refuse, siteIdOf, textOf } from './fields.js';
import type { OperationContext } from './operation-context.js';
import { explainRefusal, siteStandingNotes, type CountedRefusal, type RefusalContext } from './refusal-explanations.js';
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

// A report of every site explains the rows of this many sites; one site's report explains all of its rows.
const EXPLAINED_SITES_MAX = 50;

/** A token's refusal is counted by client, with none of the fields of an address's. */
const BY_CLIENT = { clientIp: null, rehearsal: false, shadow: false, moreAddresses: 0 } as const;

/** "A partner says they are blocked": the refusals of their site and of their tokens, each with why and what next. */
export async function blockedPartner(context: OperationContext, request: { site: string | undefined; client: string | undefined; since: string | undefined; limit: string | undefined }) {
  const { admin } = context;
  const namedSite = optionalSite(request.site, 'site');
  const clientId = request.client === undefined ? undefined : clientIdOf(request.client, 'client');
  const hours = countOf(request.since, 'since', 'hours', DENIAL_DEFAULT_SINCE_HOURS, MAX_SINCE_HOURS);
  const limit = countOf(request.limit, 'limit', 'rows', DENIAL_REPORT_ROWS, MAX_REPORT_ROWS);
  const { sunsetAt } = await sunsetPolicy(context);
  const since = new Date(context.now - hours * HOUR_MS);
  const client = clientId === undefined ? undefined : await admin.refusals.clientStanding(clientId);
  const explaining = { client, sunsetAt, audience: context.config.tokens?.audience };
  const siteId = namedSite ?? client?.siteId ?? undefined;
  const denials =
    clientId !== undefined && namedSite === undefined
      ? { rows: [], omittedRows: 0 }
      : await admin.sunsetReports.denialReport(since, siteId, limit);
  const tokensOf = clientId !== undefined ? { clientId } : siteId !== undefined ? { siteId } : undefined;
  const tokens = tokensOf === undefined ? [] : await admin.refusals.tokenRefusals(since, tokensOf);
  const standings = new Map<SiteId, SiteStanding | undefined>();
  // null: past EXPLAINED_SITES_MAX sites, the row goes without why and what next.
  const standingOf = async (id: SiteId | null): Promise<SiteStanding | undefined | null> => {
    if (id === null) return undefined;
    if (!standings.has(id)) {
      if (standings.size >= EXPLAINED_SITES_MAX) return null;
      standings.set(id, await admin.refusals.siteStanding(id, since));
    }
    return standings.get(id);
  };
  const counted: (CountedRefusal & { count: number; firstSeen: string })[] = [
    ...denials.rows.map((row) => ({ ...row, clientId: null, rule: null, signed: null })),
    ...tokens.map((row) => ({ ...row, ...BY_CLIENT })),
  ].sort((a, b) => b.count - a.count);
  const rows = [];
  for (const refusal of counted) {
    const site = await standingOf(refusal.siteId);
    const explanation = site === null ? undefined : explainRefusal(refusal, { site, ...explaining });
    rows.push({
      ...refusal,
      code: ERROR_CATALOGUE[refusal.errorId as ErrorId]?.code ?? String(refusal.errorId),
      reason: explanation?.reason ?? null,
      nextStep: explanation?.nextStep ?? null,
      audit: explanation?.audit ?? null,
    });
  }
  const site = siteId === undefined ? undefined : await standingOf(siteId);
  return {
    site: site ? { siteId: site.siteId, name: site.name, enabled: site.enabled, authMethod: site.authMethod } : null,
    client: client === undefined ? null : { clientId: client.clientId, siteId: client.siteId },
    notes: [...(site ? siteStandingNotes(site) : []), ...clientNotes(since, { site: undefined, ...explaining })],
    rows,
    omittedRows: denials.omittedRows,
  };
}

/** A client looked up by id that is registered nowhere: said even before any of its tokens is refused. */
function clientNotes(since: Date, context: RefusalContext) {
  const { client } = context;
  if (client === undefined || client.siteId !== null) return [];
  const named = { errorId: 107, siteId: null, clientId: client.clientId, rule: null, signed: true };
  return [explainRefusal({ ...BY_CLIENT, ...named, lastSeen: since.toISOString() }, context)];
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
