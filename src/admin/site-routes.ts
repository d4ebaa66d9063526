import { allowNetworks, revokeNetworks } from '../operations/allowlist-operations.js';
import { MAX_NAME, MAX_NOTE, siteIdOf } from '../operations/fields.js';
import { importKey, issueKey, revokeKey, ROLL_OVERLAP_DAYS, rollKey } from '../operations/key-operations.js';
import { addSite, revokeTokens, setAuthMethod, setGrace, setSiteEnabled } from '../operations/site-operations.js';
import type { SiteId } from '../decision/types.js';
import type { CredentialAdmin, SiteAccess, SiteSummary } from '../store/credential-admin.js';
import { ALLOWED, ALLOWLIST_ENTRY, GRACE, IMPORTED_KEY, ISSUED_KEY, KEY, KEY_CHANGE, ME, REMOVED, ROLLED_KEY, SITE, SITE_CHANGE, SITE_DETAIL, TOKEN_POLICY, TOKEN_POLICY_CHANGE } from './api-schemas.js';
import { ADMIN_ROLES } from './principal.js';
import { fields, input, paginate, warned, type AdminRoute, type RouteRequest, type Schema } from './route-table.js';

export const note: Schema = { type: 'string', maxLength: 4 * MAX_NOTE, description: `at most ${MAX_NOTE} characters, no control characters; a UUID in it is masked` };
const expires: Schema = { type: 'string', description: 'when the key stops being accepted: an ISO 8601 date (midnight UTC) or date-time with a zone, in the future; default never', example: '2027-01-31' };

function siteView(site: SiteSummary, access: SiteAccess | undefined) {
  return {
    id: site.siteId,
    name: site.name,
    enabled: site.enabled,
    createdAt: site.createdAt,
    activeKeys: site.activeKeys,
    allowlistSize: site.allowlistEntries,
    authMethod: access?.authMethod ?? 'tokens',
    graceUntil: access?.graceUntil ?? null,
    tokensNotBefore: access?.tokensNotBefore ?? null,
  };
}

async function siteOf(admin: CredentialAdmin, siteId: SiteId) {
  const [access] = await admin.siteAccess(siteId);
  return siteView(await admin.getSite(siteId), access);
}

export const siteId = (request: RouteRequest): SiteId => siteIdOf(request.params['siteId']);

export const SITE_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET', path: '/api/v1/me', role: 'viewer',
    summary: 'who the token says you are, and your roles',
    response: ME,
    handle: async ({ principal }) => ({
      subject: principal?.subject,
      email: principal?.email ?? null,
      name: principal?.name ?? null,
      roles: ADMIN_ROLES.filter((role) => principal?.roles.has(role)),
    }),
  },
  {
    method: 'GET', path: '/api/v1/sites', role: 'viewer',
    summary: 'sites with their state, method, active keys, allowlist size and grace; ?query= finds an id or a name',
    response: SITE,
    query: { query: { description: 'part of a site id or name, case ignored', schema: { type: 'string', maxLength: 200 } } },
    paginated: true,
    handle: async ({ admin, query, page }) => {
      const wanted = query.get('query')?.trim().toLowerCase() ?? '';
      const [sites, access] = await Promise.all([admin.listSites(), admin.siteAccess()]);
      const accessOf = new Map(access.map((entry) => [entry.siteId, entry]));
      const found = sites.filter((site) => wanted === '' || site.siteId.includes(wanted) || site.name.toLowerCase().includes(wanted));
      return paginate(found.map((site) => siteView(site, accessOf.get(site.siteId))), page);
    },
  },
  {
    method: 'POST', path: '/api/v1/sites', role: 'account-manager',
    summary: 'register a partner site (as `site add`)',
    response: SITE,
    body: fields({ id: { type: 'string', description: 'the site id, e.g. "1001"' }, name: { type: 'string', maxLength: 4 * MAX_NAME, description: "the partner's name" } }, ['id']),
    status: 201,
    handle: async (request) => siteOf(request.admin, (await addSite(request, input(request))).siteId),
  },
  {
    method: 'GET', path: '/api/v1/sites/{siteId}', role: 'viewer',
    summary: 'a site with its allowlist, token clients, grace and method (keys: GET …/keys)',
    response: SITE_DETAIL,
    handle: async (request) => {
      const { admin } = request;
      const id = siteId(request);
      const site = await siteOf(admin, id);
      const [allowlist, tokenClients] = await Promise.all([admin.listNetworks(id), admin.tokens.listClients(id)]);
      return { ...site, allowlist, tokenClients };
    },
  },
  ...(['disable', 'enable'] as const).map(
    (verb): AdminRoute => ({
      method: 'POST', path: `/api/v1/sites/{siteId}/${verb}`, role: 'account-manager',
      summary: verb === 'disable' ? "refuse the site's requests (101); its keys and allowlist are kept" : "accept the site's requests again",
      response: SITE_CHANGE,
      handle: async (request) => {
        const { result, warnings } = await setSiteEnabled(request, { siteId: request.params['siteId'], enabled: verb === 'enable' });
        return { ...(await siteOf(request.admin, result.site.siteId)), changed: result.changed, warnings };
      },
    }),
  ),
  {
    method: 'PUT', path: '/api/v1/sites/{siteId}/auth-method', role: 'account-manager',
    summary: 'which methods the site accepts: both (API keys and tokens) or tokens only (its keys get 105)',
    response: TOKEN_POLICY_CHANGE,
    body: fields({ method: { type: 'string', description: 'both or tokens' } }, ['method']),
    handle: async (request) => {
      const { policy, changed } = await setAuthMethod(request, input(request));
      return { ...policy, changed };
    },
  },
  {
    method: 'PUT', path: '/api/v1/sites/{siteId}/grace', role: 'account-manager',
    summary: 'let the site keep its API keys through brownouts and the sunset until a date',
    response: GRACE,
    body: fields({ until: { type: 'string', description: 'an ISO 8601 date (midnight UTC) or date-time with a zone', example: '2027-03-31' } }, ['until']),
    handle: async (request) => setGrace(request, input(request)),
  },
  {
    method: 'DELETE', path: '/api/v1/sites/{siteId}/grace', role: 'account-manager',
    summary: 'take the grace back: the site follows brownouts and the sunset again',
    response: GRACE,
    handle: async (request) => setGrace(request, { siteId: request.params['siteId'], until: null }),
  },
  {
    method: 'POST', path: '/api/v1/sites/{siteId}/revoke-tokens', role: 'account-manager',
    summary: 'refuse every token of the site issued before now',
    response: TOKEN_POLICY,
    handle: async (request) => revokeTokens(request, input(request)),
  },
  {
    method: 'GET', path: '/api/v1/sites/{siteId}/allowlist', role: 'viewer',
    summary: "the site's allowlist",
    response: ALLOWLIST_ENTRY,
    paginated: true,
    handle: async (request) => paginate(await request.admin.listNetworks(siteId(request)), request.page),
  },
  {
    method: 'POST', path: '/api/v1/sites/{siteId}/allowlist', role: 'account-manager',
    summary: "add addresses or networks (IPv4 or IPv6) to the site's allowlist",
    response: ALLOWED,
    body: fields(
      {
        entries: { type: 'array', items: { type: 'string', maxLength: 100 }, maxItems: 1_000, description: 'e.g. ["203.0.113.0/24", "2001:db8:42::/48"]' },
        allowAnyAddress: { type: 'boolean', description: 'true: yes, 0.0.0.0/0 or ::/0 is meant, admitting every address (refused with ANY_ADDRESS_UNCONFIRMED without it)' },
      },
      ['entries'],
    ),
    status: 201,
    handle: async (request) => warned(allowNetworks(request, { ...input(request), allowAnyAddress: request.body['allowAnyAddress'] === true })),
  },
  {
    method: 'DELETE', path: '/api/v1/sites/{siteId}/allowlist/{entry}', role: 'account-manager',
    summary: "remove an entry from the site's allowlist (URL-encoded, e.g. 203.0.113.0%2F24)",
    response: REMOVED,
    params: { entry: 'the address or network, URL-encoded' },
    handle: async (request) => warned(revokeNetworks(request, { siteId: request.params['siteId'], entries: [request.params['entry'] ?? ''], field: 'entry' })),
  },
  {
    method: 'GET', path: '/api/v1/sites/{siteId}/keys', role: 'account-manager',
    summary: 'the keys of a site, masked, with their state and last use (as `key list`)',
    response: KEY,
    paginated: true,
    handle: async (request) => paginate(await request.admin.listKeys(siteId(request)), request.page),
  },
  {
    method: 'POST', path: '/api/v1/sites/{siteId}/keys', role: 'account-manager',
    summary: 'issue a key: the answer holds it in `key`, the only time it is shown',
    response: ISSUED_KEY,
    body: fields({ note, expires }),
    status: 201,
    handle: async (request) => {
      const { result, warnings } = await issueKey(request, input(request));
      const { apiKey, ...issued } = result;
      return { key: apiKey, ...issued, warnings };
    },
  },
  {
    method: 'POST', path: '/api/v1/sites/{siteId}/keys/import', role: 'account-manager',
    summary: 'register a key the partner already has; the answer shows it masked',
    response: IMPORTED_KEY,
    body: fields({ key: { type: 'string', maxLength: 100, description: 'the key, a UUID' }, note, expires }, ['key']),
    status: 201,
    handle: async (request) => warned(importKey(request, input(request))),
  },
  {
    method: 'POST', path: '/api/v1/sites/{siteId}/keys/{keyId}/roll', role: 'account-manager',
    summary: `issue a new key (in \`key\`, the only time it is shown) and give the old one an end, by default ${ROLL_OVERLAP_DAYS} days from now`,
    response: ROLLED_KEY,
    params: { keyId: 'the active key to replace, as GET …/keys shows it' },
    body: fields({
      oldExpires: { type: 'string', description: `when the old key stops being accepted: an ISO 8601 date (midnight UTC) or date-time with a zone, in the future; default ${ROLL_OVERLAP_DAYS} days from now; an old key that expires sooner keeps its end`, example: '2027-01-31' },
      expires,
      note,
    }),
    status: 201,
    handle: async (request) => {
      const { result, warnings } = await rollKey(request, input(request));
      const { key: { apiKey, ...issued }, replaced } = result;
      return { key: apiKey, ...issued, replaced: { keyId: replaced.keyId, expiresAt: replaced.expiresAt }, warnings };
    },
  },
  {
    method: 'POST', path: '/api/v1/sites/{siteId}/keys/{keyId}/revoke', role: 'account-manager',
    summary: 'revoke a key; every replica refuses it within a second',
    response: KEY_CHANGE,
    params: { keyId: 'the key id, as GET …/keys shows it' },
    handle: async (request) => {
      const { key, changed } = await revokeKey(request, input(request));
      return { ...key, changed };
    },
  },
];

