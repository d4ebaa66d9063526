import { siteIdOf } from '../operations/fields.js';
import { addTokenClient, createTokenClient, removeTokenClient, rotateTokenClientSecret } from '../operations/token-client-operations.js';
import { HANDOVER, TOKEN_CLIENT, TOKEN_CLIENT_REMOVED } from './api-schemas.js';
import { note } from './site-routes.js';
import { fields, input, paginate, type AdminRoute } from './route-table.js';

/** Registering a site's existing client, or creating, rotating and removing one at the issuer (dynamic registration). */

export const TOKEN_CLIENT_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET', path: '/api/v1/token-clients', role: 'viewer',
    summary: 'the registered token clients, of every site or of one',
    response: TOKEN_CLIENT,
    query: { siteId: { description: 'only this site', schema: { type: 'string' } } },
    paginated: true,
    handle: async ({ admin, query, page }) => {
      const wanted = query.get('siteId');
      return paginate(await admin.tokens.listClients(wanted === null ? undefined : siteIdOf(wanted)), page);
    },
  },
  {
    method: 'POST', path: '/api/v1/sites/{siteId}/token-clients', role: 'account-manager',
    summary: "register an OAuth client: its access tokens authenticate as the site",
    response: TOKEN_CLIENT,
    body: fields({ clientId: { type: 'string', maxLength: 1_000 }, note }, ['clientId']),
    status: 201,
    handle: async (request) => addTokenClient(request, input(request)),
  },
  {
    method: 'POST', path: '/api/v1/sites/{siteId}/token-clients/create', role: 'account-manager',
    summary: "create the partner's client at the issuer (dynamic client registration) and register it for the site; answers the hand-over, its secret once",
    response: HANDOVER,
    body: fields({
      note,
      jwks: { type: 'any', description: "the partner's public keys as a JWKS: the client signs assertions (private_key_jwt) and has no secret; private keys are refused" },
      jwksUri: { type: 'string', maxLength: 2048, description: 'where the partner publishes those keys instead: https:// (http:// only on loopback)' },
    }),
    status: 201,
    handle: async (request) => {
      const jwks = request.body['jwks'];
      const { handover } = await createTokenClient(request, {
        ...input(request),
        jwks: jwks === undefined ? undefined : JSON.stringify(jwks),
      });
      return handover;
    },
  },
  {
    method: 'POST', path: '/api/v1/token-clients/{clientId}/rotate-secret', role: 'account-manager',
    summary: 'a new secret at the issuer for a client created here, answered once; the old one stops working',
    response: HANDOVER,
    handle: async (request) => (await rotateTokenClientSecret(request, input(request))).handover,
  },
  {
    method: 'DELETE', path: '/api/v1/token-clients/{clientId}', role: 'account-manager',
    summary: 'unregister a client: its tokens are refused (107) from now on; one created here is deleted at the issuer first',
    response: TOKEN_CLIENT_REMOVED,
    query: { localOnly: { description: 'true: remove it here only, leaving it at the issuer (unreachable, or deleted there already)', schema: { type: 'string', enum: ['true', 'false'] } } },
    handle: async (request) => {
      const localOnly = request.query.get('localOnly') === 'true';
      const { client, deletedAtIssuer } = await removeTokenClient(request, { ...input(request), localOnly });
      return { ...client, deletedAtIssuer };
    },
  },
];
