import { countOf, instantOf, refuse, siteIdOf } from '../operations/fields.js';
import type { SiteId } from '../decision/types.js';
import { BROWNOUT_IMPACT, SITE_IMPACT } from './api-schemas.js';
import type { AdminRoute, RouteRequest } from './route-table.js';
import { siteId } from './site-routes.js';

/** The numbers the console's confirmation names before a change refuses someone. Reads only: a viewer may ask. */

const DAY_MS = 86_400_000;
const IMPACT_DEFAULT_DAYS = 30;
const IMPACT_MAX_DAYS = 90;
const MAX_LISTED_SITES = 10_000;

const daysQuery = {
  days: { description: `days back, 1 to ${IMPACT_MAX_DAYS} (default ${IMPACT_DEFAULT_DAYS})`, schema: { type: 'integer', minimum: 1, maximum: IMPACT_MAX_DAYS } },
} as const;

function windowOf(request: RouteRequest): { readonly days: number; readonly since: Date } {
  const days = countOf(request.query.get('days') ?? undefined, 'days', 'days', IMPACT_DEFAULT_DAYS, IMPACT_MAX_DAYS);
  return { days, since: new Date(request.now - days * DAY_MS) };
}

function brownoutSites(text: string | null): SiteId[] | null {
  if (text === null || text.trim() === '') return null;
  const parts = text.split(',').map((part) => part.trim()).filter((part) => part !== '');
  if (parts.length > MAX_LISTED_SITES) throw refuse('TOO_MANY_SITES', 'sites', `list more than ${MAX_LISTED_SITES} site ids; name fewer, or none for every site`);
  return parts.map((part) => siteIdOf(part, 'sites'));
}

function startOf(request: RouteRequest): Date {
  const text = request.query.get('from');
  if (text === null || text === 'now') return new Date(request.now);
  return instantOf(text, 'from');
}

export const IMPACT_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET', path: '/api/v1/sites/{siteId}/impact', role: 'viewer',
    summary: "the site's requests in the last days by method, its addresses, active keys and token clients: what disabling it or a change of its credentials would refuse",
    response: SITE_IMPACT,
    query: daysQuery,
    handle: async (request) => {
      const { days, since } = windowOf(request);
      return request.admin.impact.site(siteId(request), since, days);
    },
  },
  {
    method: 'GET', path: '/api/v1/brownouts/impact', role: 'viewer',
    summary: 'whom a brownout would refuse (105): the sites it covers that accept API keys, and their API-key requests in the last days',
    response: BROWNOUT_IMPACT,
    query: {
      sites: { description: 'comma-separated site ids (default every site)', schema: { type: 'string' } },
      from: { description: 'when it starts: now (default), a date (midnight UTC) or a date-time with its zone; a grace that lasts past it exempts a site', schema: { type: 'string', maxLength: 40 } },
      ...daysQuery,
    },
    handle: async (request) => {
      const { days, since } = windowOf(request);
      return request.admin.impact.brownout(brownoutSites(request.query.get('sites')), startOf(request), since, days);
    },
  },
];
