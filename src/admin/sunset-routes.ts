import { countOption, siteIdArgument, UsageError } from '../cli/arguments.js';
import { AUDIT_DEFAULT_SINCE_DAYS, AUDIT_MAX_SINCE_DAYS } from '../cli/audit-commands.js';
import { auditActionArgument, brownoutArguments, brownoutIdArgument, sunsetChangeArguments } from '../cli/sunset-arguments.js';
import { DENIAL_REPORT_ROWS, MAX_REPORT_ROWS, MAX_SINCE_DAYS, MAX_SINCE_HOURS } from '../cli/sunset-commands.js';
import { configuredSunsetPolicy } from '../serve/check-policies.js';
import { CLIENT_ID_MAX_CHARS, isClientId } from '../common/client-id.js';
import { parseInstant } from '../common/sunset-values.js';
import { auditSentence } from '../operations/audit-sentences.js';
import { blockedPartnerReport } from '../operations/blocked-partner-report.js';
import { COUNTS_BEGIN_WHY } from '../store/sunset-admin.js';
import { ApiError, INVALID_REQUEST } from './api-error.js';
import { AUDIT_ENTRY, BROWNOUT, BROWNOUT_CHANGE, DENIAL_REPORT, MIGRATION_ENVELOPE, MIGRATION_ROW, SUNSET_POLICY } from './api-schemas.js';
import { paginate, type AdminRoute, type RouteRequest } from './route-table.js';

/** The API-key sunset's routes (grace is a site's: site-routes.ts), the reports and the audit trail. */

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

const timeText = { type: 'string', description: 'an ISO 8601 date (midnight UTC) or date-time with a zone' } as const;
const optionalText = (request: RouteRequest, field: string): string | undefined => request.body[field] as string | undefined;

function sunsetFallback(request: RouteRequest) {
  return configuredSunsetPolicy(request.config);
}

/** ?since= as `report`'s --since, in days or hours. */
function since(request: RouteRequest, unit: 'days' | 'hours', fallback: number, max: number): number {
  return countOption('since', request.query.get('since') ?? undefined, unit, fallback, max);
}

// The audit cursor: the id of the last entry of the page, so that new changes do not shift the next page.
const AUDIT_CURSOR = /^a([1-9][0-9]{0,18})$/;

export const SUNSET_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/api/v1/brownouts',
    role: 'viewer',
    summary: 'brownouts, scheduled, running, over and cancelled',
    response: BROWNOUT,
    paginated: true,
    handle: async ({ admin, page }) => paginate(await admin.sunset.listBrownouts(), page),
  },
  {
    method: 'POST',
    path: '/api/v1/brownouts',
    role: 'admin',
    summary: 'refuse API-key requests (105) for a while, for the named sites or all; dryRun only counts them',
    response: BROWNOUT,
    body: {
      type: 'object',
      properties: {
        from: { type: 'string', description: 'now, or an ISO 8601 date (midnight UTC) or date-time with a zone' },
        until: { ...timeText, description: 'when it ends (exclusive), after from and in the future' },
        sites: { type: 'array', items: { type: 'string' }, maxItems: 10_000, description: 'only these site ids (default every site)' },
        note: { type: 'string', maxLength: 2_000 },
        dryRun: { type: 'boolean', description: 'refuse nobody: count whom it would refuse' },
      },
      required: ['from', 'until'],
    },
    status: 201,
    handle: async (request) => {
      const brownout = brownoutArguments(
        {
          from: optionalText(request, 'from'),
          until: optionalText(request, 'until'),
          sites: (request.body['sites'] as string[] | undefined) ?? [],
          note: optionalText(request, 'note'),
          dryRun: request.body['dryRun'] === true,
        },
        request.now,
      );
      return request.admin.sunset.addBrownout(brownout);
    },
  },
  {
    method: 'POST',
    path: '/api/v1/brownouts/{brownoutId}/cancel',
    role: 'admin',
    summary: 'call a brownout off; every replica lets requests through again within a second',
    response: BROWNOUT_CHANGE,
    params: { brownoutId: 'the brownout id, as GET /api/v1/brownouts shows it' },
    handle: async (request) => {
      const { brownout, changed } = await request.admin.sunset.cancelBrownout(brownoutIdArgument(request.params['brownoutId'] ?? ''));
      return { ...brownout, changed };
    },
  },
  {
    method: 'GET',
    path: '/api/v1/sunset',
    role: 'viewer',
    summary: 'the sunset policy every process follows: the date API keys retire, whether it is enforced, the migration guide',
    response: SUNSET_POLICY,
    handle: async (request) => request.admin.sunset.policy(sunsetFallback(request)),
  },
  {
    method: 'PUT',
    path: '/api/v1/sunset',
    role: 'admin',
    summary: 'change the sunset policy; every replica follows within a second',
    response: SUNSET_POLICY,
    body: {
      type: 'object',
      properties: {
        at: { ...timeText, description: 'when API keys retire' },
        enforce: { type: 'boolean', description: 'refuse valid API keys with 105 from the sunset on' },
        guide: { type: 'string', nullable: true, format: 'uri', description: 'the migration guide (https://), or null to remove it' },
      },
    },
    handle: async (request) => {
      const change = sunsetChangeArguments({
        at: optionalText(request, 'at'),
        enforce: request.body['enforce'] as boolean | undefined,
        guide: request.body['guide'] as string | null | undefined,
      });
      const { policy } = await request.admin.sunset.setPolicy(change, sunsetFallback(request));
      return policy;
    },
  },
  {
    method: 'GET',
    path: '/api/v1/reports/migration',
    role: 'viewer',
    summary: "keys used in the window with days left; sites=true: each site's share on tokens and whether it can go tokens-only",
    response: MIGRATION_ROW,
    envelope: MIGRATION_ENVELOPE,
    query: {
      since: { description: `days back, 1 to ${MAX_SINCE_DAYS} (default 30)`, schema: { type: 'integer', minimum: 1, maximum: MAX_SINCE_DAYS } },
      sites: { description: 'true: one row per site', schema: { type: 'boolean' } },
    },
    paginated: true,
    handle: async (request) => {
      const { admin, now, query } = request;
      const sitesText = query.get('sites');
      if (sitesText !== null && sitesText !== 'true' && sitesText !== 'false') throw new ApiError(400, INVALID_REQUEST, `sites must be true or false, not ${JSON.stringify(sitesText.slice(0, 32))}`);
      const sinceAt = new Date(now - since(request, 'days', 30, MAX_SINCE_DAYS) * DAY_MS);
      const sunsetAt = Date.parse((await admin.sunset.policy(sunsetFallback(request))).sunsetAt);
      if (sitesText === 'true') {
        const { rows, countsBegin, countsBeginLate } = await admin.sunset.migrationSiteReport(sinceAt, sunsetAt, now);
        const warnings =
          countsBeginLate === undefined
            ? []
            : [`the oldest request counts held are from ${countsBeginLate}: tokenRequests, keyRequests and tokenShare count from then, not from ${sinceAt.toISOString()} (${COUNTS_BEGIN_WHY})`];
        return { ...paginate(rows, request.page), countsBegin, warnings };
      }
      return paginate(await admin.sunset.migrationReport(sinceAt, sunsetAt, now), request.page);
    },
  },
  {
    method: 'GET',
    path: '/api/v1/reports/denials',
    role: 'viewer',
    summary: 'refusals by error and client address or token client, largest counts first, each with why and what next ("partner X says they are blocked")',
    response: DENIAL_REPORT,
    query: {
      site: { description: 'only this site (with its token clients\' refused tokens)', schema: { type: 'string' } },
      client: { description: "only this token client's refused tokens, and where it is registered", schema: { type: 'string', maxLength: CLIENT_ID_MAX_CHARS } },
      since: { description: `hours back, 1 to ${MAX_SINCE_HOURS} (default 24)`, schema: { type: 'integer', minimum: 1, maximum: MAX_SINCE_HOURS } },
      limit: { description: `rows, 1 to ${MAX_REPORT_ROWS} (default ${DENIAL_REPORT_ROWS}); omittedRows says how many more there were`, schema: { type: 'integer', minimum: 1, maximum: MAX_REPORT_ROWS } },
    },
    handle: async (request) => {
      const siteText = request.query.get('site');
      const siteId = siteText === null ? undefined : siteIdArgument(siteText);
      const clientText = request.query.get('client');
      if (clientText !== null && !isClientId(clientText)) throw new ApiError(400, INVALID_REQUEST, `client must be a client id: 1 to ${CLIENT_ID_MAX_CHARS} visible ASCII characters without spaces`);
      const hours = since(request, 'hours', 24, MAX_SINCE_HOURS);
      const limit = countOption('limit', request.query.get('limit') ?? undefined, 'rows', DENIAL_REPORT_ROWS, MAX_REPORT_ROWS);
      const { sunsetAt } = await request.admin.sunset.policy(sunsetFallback(request));
      const report = await blockedPartnerReport(request.admin, {
        since: new Date(request.now - hours * HOUR_MS),
        siteId,
        clientId: clientText ?? undefined,
        limit,
        sunsetAt,
        audience: request.config.tokens?.audience,
      });
      return { items: report.rows, omittedRows: report.omittedRows, next: null, site: report.site, client: report.client, notes: report.notes };
    },
  },
  {
    method: 'GET',
    path: '/api/v1/audit',
    role: 'viewer',
    summary: 'who changed what and when, newest first, each with a sentence that says it; by site, person, action and time',
    response: AUDIT_ENTRY,
    query: {
      site: { description: 'only changes of this site', schema: { type: 'string' } },
      actor: { description: 'only changes by this person: their email address or a part of it, case ignored', schema: { type: 'string', maxLength: 200 } },
      since: { description: `days back, 1 to ${AUDIT_MAX_SINCE_DAYS} (default ${AUDIT_DEFAULT_SINCE_DAYS}); from replaces it`, schema: { type: 'integer', minimum: 1, maximum: AUDIT_MAX_SINCE_DAYS } },
      from: { description: 'only changes at or after this date (midnight UTC) or date-time with a zone', schema: { type: 'string', maxLength: 40 } },
      until: { description: 'only changes before this date-time with a zone, or up to the end of this date (UTC)', schema: { type: 'string', maxLength: 40 } },
      action: { description: 'an action such as key.revoke, or a group such as key', schema: { type: 'string', maxLength: 100 } },
    },
    paginated: true,
    handle: async (request) => {
      const siteText = request.query.get('site');
      const siteId = siteText === null ? undefined : siteIdArgument(siteText);
      const days = since(request, 'days', AUDIT_DEFAULT_SINCE_DAYS, AUDIT_MAX_SINCE_DAYS);
      const action = auditActionArgument(request.query.get('action') ?? undefined);
      const actor = request.query.get('actor')?.trim() || undefined;
      const from = auditInstant(request, 'from');
      const until = auditInstant(request, 'until');
      if (from !== undefined && until !== undefined && until <= from) throw new ApiError(400, INVALID_REQUEST, 'until must be after from');
      let beforeId: string | undefined;
      if (request.page.cursor !== undefined) {
        beforeId = AUDIT_CURSOR.exec(Buffer.from(request.page.cursor, 'base64url').toString('latin1'))?.[1];
        if (beforeId === undefined) throw new UsageError('cursor is not one this API gave; pass the "next" of the previous page as it was');
      }
      const { entries, more } = await request.admin.auditLog.list({
        since: from ?? new Date(request.now - days * DAY_MS),
        ...(until === undefined ? {} : { until }),
        siteId,
        action,
        ...(actor === undefined ? {} : { actor }),
        limit: request.page.limit,
        ...(beforeId === undefined ? {} : { beforeId }),
      });
      const last = entries.at(-1);
      return {
        items: entries.map((entry) => ({ ...entry, summary: auditSentence(entry) })),
        next: more && last !== undefined ? Buffer.from(`a${last.id}`, 'latin1').toString('base64url') : null,
      };
    },
  },
];

/** ?from= or ?until= of the audit trail; a date alone as until takes in the whole of that day. */
function auditInstant(request: RouteRequest, field: 'from' | 'until'): Date | undefined {
  const text = request.query.get(field)?.trim();
  if (text === undefined || text === '') return undefined;
  const at = parseInstant(text, { dateAlone: true });
  if (at === undefined) throw new ApiError(400, INVALID_REQUEST, `${field} must be a date such as 2026-11-29 or a date-time with a zone such as 2026-11-29T10:00:00Z`);
  return new Date(field === 'until' && text.length === 10 ? at + DAY_MS : at);
}
