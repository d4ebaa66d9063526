import { DOCUMENT } from './api-schemas.js';
import { openApiDocument } from './openapi.js';
import { IMPACT_ROUTES } from './impact-routes.js';
import type { AdminRoute } from './route-table.js';
import { SITE_ROUTES } from './site-routes.js';
import { SUNSET_ROUTES } from './sunset-routes.js';
import { TOKEN_CLIENT_ROUTES } from './token-client-routes.js';

export const OPENAPI_PATH = '/api/v1/openapi.json';
const API_VERSION = '1.0.0';

export const ADMIN_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET', path: OPENAPI_PATH, role: 'public',
    summary: 'this API described as OpenAPI 3.1, generated from the route table the server dispatches on',
    response: DOCUMENT,
    handle: async () => openApiDocument(ADMIN_ROUTES, API_VERSION),
  },
  ...SITE_ROUTES,
  ...TOKEN_CLIENT_ROUTES,
  ...SUNSET_ROUTES,
  ...IMPACT_ROUTES,
];
