import { CLIENT_ID_MAX_CHARS } from '../common/client-id.js';
import { canonicalPositiveId } from '../common/positive-id.js';
import { refuse } from '../operations/fields.js';
import {
  AUDIT_DEFAULT_SINCE_DAYS,
  AUDIT_MAX_SINCE_DAYS,
  auditEntries,
  blockedPartner,
  countsBeginLateWarning,
  DENIAL_REPORT_ROWS,
  MAX_REPORT_ROWS,
  MAX_SINCE_DAYS,
  MAX_SINCE_HOURS,
  migrationReport,
} from '../operations/report-operations.js';
import { addBrownout, cancelBrownout, setSunsetPolicy, sunsetPolicy } from '../operations/sunset-operations.js';
import { AUDIT_ENTRY, BROWNOUT, BROWNOUT_CHANGE, DENIAL_REPORT, MIGRATION_ENVELOPE, MIGRATION_ROW, SUNSET_POLICY, SUNSET_POLICY_CHANGE } from './api-schemas.js';
import { auditSentence } from '../operations/audit-sentences.js';
import { fields, input, paginate, warned, type AdminRoute } from './route-table.js';

/** The API-key sunset's routes (grace is a site's: site-routes.ts), the reports and the audit trail. */

const timeText = { type: 'string', description: 'an ISO 8601 date (midnight UTC) or date-time with a zone' } as const;

/** The audit cursor: the id of the last entry of the page, so that new changes do not shift the next page. */
const auditCursor = (id: string): string => Buffer.from(`a${id}`, 'latin1').toString('base64url');
const auditCursorId = (cursor: string): string | undefined => {
  const text = Buffer.from(cursor, 'base64url').toString('latin1');
  return text.startsWith('a') ? canonicalPositiveId(text.slice(1)) : undefined;
};

export const SUNSET_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET', path: '/api/v1/brownouts', role: 'viewer',
    summary: 'brownouts, scheduled, running, over and cancelled',
    response: BROWNOUT,
    paginated: true,
    handle: async ({ admin, page }) => paginate(await admin.sunset.listBrownouts(), page),
  },
  {
    method: 'POST', path: '/api/v1/brownouts', role: 'admin',
    summary: 'refuse API-key requests (105) for a while, for the named sites or all; dryRun only counts them',
    response: BROWNOUT,
    body: fields(
      {
        from: { type: 'string', description: 'now, or an ISO 8601 date (midnight UTC) or date-time with a zone' },
        until: { ...timeText, description: 'when it ends (exclusive), after from and in the future' },
        sites: { type: 'array', items: { type: 'string' }, maxItems: 10_000, description: 'only these site ids; leave the field out for every site (an empty list is refused)' },
        note: { type: 'string', maxLength: 2_000 },
        dryRun: { type: 'boolean', description: 'refuse nobody: count whom it would refuse' },
      },
      ['from', 'until'],
    ),
    status: 201,
    handle: async (request) => addBrownout(request, { ...input(request), dryRun: request.body['dryRun'] === true }),
  },
  {
    method: 'POST', path: '/api/v1/brownouts/{brownoutId}/cancel', role: 'admin',
    summary: 'call a brownout off; every replica lets requests through again within a second',
    response: BROWNOUT_CHANGE,
    handle: async (request) => {
      const { brownout, changed } = await cancelBrownout(request, input(request));
      return { ...brownout, changed };
    },
  },
  {
    method: 'GET', path: '/api/v1/sunset', role: 'viewer',
    summary: 'the sunset policy every process follows: the date API keys retire, whether it is enforced, the migration guide',
    response: SUNSET_POLICY,
    handle: sunsetPolicy,
  },
  {
    method: 'PUT', path: '/api/v1/sunset', role: 'admin',
    summary: 'change the sunset policy; every replica follows within a second',
    response: SUNSET_POLICY_CHANGE,
    body: fields({
      at: { ...timeText, description: 'when API keys retire' },
      enforce: { type: 'boolean', description: 'refuse valid API keys with 105 from the sunset on' },
      guide: { type: 'string', nullable: true, format: 'uri', description: 'the migration guide (https://), or null to remove it' },
    }),
    handle: async (request) => warned(setSunsetPolicy(request, input(request))),
  },
  {
    method: 'GET', path: '/api/v1/reports/migration', role: 'viewer',
    summary: "keys used in the window with days left; sites=true: each site's share on tokens and whether it can go tokens-only",
    response: MIGRATION_ROW,
    envelope: MIGRATION_ENVELOPE,
    query: {
      since: { description: `days back, 1 to ${MAX_SINCE_DAYS} (default 30)`, schema: { type: 'integer', minimum: 1, maximum: MAX_SINCE_DAYS } },
      sites: { description: 'true: one row per site', schema: { type: 'boolean' } },
    },
    paginated: true,
    handle: async (request) => {
      const sitesText = request.query.get('sites');
      if (sitesText !== null && sitesText !== 'true' && sitesText !== 'false') throw refuse('FLAG_INVALID', 'sites', `must be true or false, not ${JSON.stringify(sitesText.slice(0, 32))}`, 'true');
      const report = await migrationReport(request, { ...input(request), sites: sitesText === 'true' });
      if (!report.sites) return paginate(report.rows, request.page);
      const warnings = report.countsBeginLate === undefined ? [] : [countsBeginLateWarning(report.countsBeginLate, report.since.toISOString())];
      return { ...paginate(report.rows, request.page), countsBegin: report.countsBegin, warnings };
    },
  },
  {
    method: 'GET', path: '/api/v1/reports/denials', role: 'viewer',
    summary: 'refusals by error and client address or token client, largest counts first, each with why and what next ("partner X says they are blocked")',
    response: DENIAL_REPORT,
    query: {
      site: { description: 'only this site (with its token clients\' refused tokens)', schema: { type: 'string' } },
      client: { description: "only this token client's refused tokens, and where it is registered", schema: { type: 'string', maxLength: CLIENT_ID_MAX_CHARS } },
      since: { description: `hours back, 1 to ${MAX_SINCE_HOURS} (default 24)`, schema: { type: 'integer', minimum: 1, maximum: MAX_SINCE_HOURS } },
      limit: { description: `rows, 1 to ${MAX_REPORT_ROWS} (default ${DENIAL_REPORT_ROWS}); omittedRows says how many more there were`, schema: { type: 'integer', minimum: 1, maximum: MAX_REPORT_ROWS } },
    },
    handle: async (request) => {
      const report = await blockedPartner(request, input(request));
      return { items: report.rows, omittedRows: report.omittedRows, next: null, site: report.site, client: report.client, notes: report.notes };
    },
  },
  {
    method: 'GET', path: '/api/v1/audit', role: 'viewer',
    summary: 'who changed what and when, newest first, each with a sentence that says it; by site, person, action and time',
    response: AUDIT_ENTRY,
    query: {
      site: { description: 'only changes of this site', schema: { type: 'string' } },
      actor: { description: "only changes by this person: a part of their sub or of their verified e-mail address (each apart), or of an older entry's actor text, case ignored", schema: { type: 'string', maxLength: 200 } },
      since: { description: `days back, 1 to ${AUDIT_MAX_SINCE_DAYS} (default ${AUDIT_DEFAULT_SINCE_DAYS}); from replaces it`, schema: { type: 'integer', minimum: 1, maximum: AUDIT_MAX_SINCE_DAYS } },
      from: { description: 'only changes at or after this date (midnight UTC) or date-time with a zone', schema: { type: 'string', maxLength: 40 } },
      until: { description: 'only changes before this date-time with a zone, or up to the end of this date (UTC)', schema: { type: 'string', maxLength: 40 } },
      action: { description: 'an action such as key.revoke, or a group such as key', schema: { type: 'string', maxLength: 100 } },
    },
    paginated: true,
    handle: async (request) => {
      let beforeId: string | undefined;
      if (request.page.cursor !== undefined) {
        beforeId = auditCursorId(request.page.cursor);
        if (beforeId === undefined) throw refuse('CURSOR_INVALID', 'cursor', 'is not one this API gave; pass the "next" of the previous page as it was');
      }
      const { entries, more } = await auditEntries(request, {
        ...input(request),
        limit: request.page.limit,
        ...(beforeId === undefined ? {} : { beforeId }),
      });
      const last = entries.at(-1);
      return {
        items: entries.map((entry) => ({ ...entry, summary: auditSentence(entry) })),
        next: more && last !== undefined ? auditCursor(last.id) : null,
      };
    },
  },
];

