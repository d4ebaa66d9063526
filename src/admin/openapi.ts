import { answerSchema, PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, type AdminRoute, type Schema } from './route-table.js';

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', description: 'stable, e.g. SITE_NOT_FOUND, DATE_IN_PAST, ANY_ADDRESS_UNCONFIRMED, INVALID_REQUEST, UNAUTHENTICATED, FORBIDDEN' },
        field: { type: 'string', description: 'the body field or query parameter it concerns, e.g. expires, entries, until; absent when none' },
        message: { type: 'string', description: 'what is wrong and what to send instead, in words for people' },
        consoleMessage: { type: 'string', description: "the same in the console's words, where a next step names its buttons rather than a request" },
      },
    },
  },
} as const;

/** A route's schema as JSON Schema 2020-12: nullable as a type list, objects closed, `any` as {}. */
function jsonSchema(schema: Schema): Record<string, unknown> {
  const { nullable, ...rest } = schema;
  if (rest.type === 'any') return rest.description === undefined ? {} : { description: rest.description };
  const converted: Record<string, unknown> = { ...rest };
  if (rest.type === 'array') converted['items'] = jsonSchema(rest.items);
  if (rest.type === 'object') {
    converted['properties'] = Object.fromEntries(Object.entries(rest.properties).map(([name, property]) => [name, jsonSchema(property)]));
    converted['additionalProperties'] = false;
  }
  if (nullable === true) converted['type'] = [rest.type, 'null'];
  return converted;
}

/** Path parameters as every route names them; a route's own `params` say more where needed. */
const PATH_PARAMETERS: Readonly<Record<string, string>> = {
  siteId: 'the site id, e.g. 1001',
  clientId: 'the OAuth client id, URL-encoded',
  brownoutId: 'the brownout id, as GET /api/v1/brownouts shows it',
};

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

/** getSites for GET /api/v1/sites, getSitesBySiteId for GET /api/v1/sites/{siteId}, postSitesKeysRevoke for …/keys/{keyId}/revoke. */
export function operationId(route: AdminRoute): string {
  const last = /\{(\w+)\}$/.exec(route.path)?.[1];
  const words = [
    ...route.path
      .replace(/^\/api\/v1\//, '')
      .split(/[/.-]/)
      .filter((word) => word !== '' && !word.startsWith('{')),
    ...(last === undefined ? [] : ['by', last]),
  ];
  const verb = { GET: 'get', POST: 'post', PUT: 'put', DELETE: 'delete' }[route.method];
  return [verb, ...words].map((word, index) => (index === 0 ? word : word.charAt(0).toUpperCase() + word.slice(1))).join('');
}

function parametersOf(route: AdminRoute): object[] {
  const inPath = [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name = '']) => ({
    name,
    in: 'path',
    required: true,
    description: route.params?.[name] ?? PATH_PARAMETERS[name] ?? name,
    schema: { type: 'string' },
  }));
  const inQuery = Object.entries(route.query ?? {}).map(([name, { description, schema }]) => ({ name, in: 'query', required: false, description, schema }));
  const paging =
    route.paginated === true
      ? [
          { name: 'limit', in: 'query', required: false, description: `items per page, 1 to ${PAGE_LIMIT_MAX}`, schema: { type: 'integer', minimum: 1, maximum: PAGE_LIMIT_MAX, default: PAGE_LIMIT_DEFAULT } },
          { name: 'cursor', in: 'query', required: false, description: 'the `next` of the previous page', schema: { type: 'string' } },
        ]
      : [];
  return [...inPath, ...inQuery, ...paging];
}

function operationOf(route: AdminRoute): object {
  const status = String(route.status ?? 200);
  const success = jsonSchema(answerSchema(route));
  const isPublic = route.role === 'public';
  return {
    operationId: operationId(route),
    summary: route.summary,
    description: isPublic ? 'Public: no token needed.' : `Needs the role ${route.role} (or a higher one).`,
    'x-required-role': route.role,
    ...(isPublic ? { security: [] } : {}),
    parameters: parametersOf(route),
    ...(route.body === undefined ? {} : { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(route.body) } } } }),
    responses: {
      [status]: { description: status === '201' ? 'created' : 'done', content: { 'application/json': { schema: success } } },
      ...(isPublic
        ? {}
        : {
            '400': errorResponse('a parameter or field is not valid; the message says what to send instead'),
            '401': errorResponse('no token, or one that does not verify (WWW-Authenticate: Bearer)'),
            '403': errorResponse(`the token's roles do not include ${route.role}`),
            '404': errorResponse('the site, key, client or brownout does not exist'),
            '409': errorResponse('it conflicts with what exists (e.g. SITE_EXISTS)'),
            '429': errorResponse('too many requests from this person; Retry-After says when to try again'),
          }),
      ...(route.body === undefined ? {} : { '413': errorResponse('the body is too large'), '415': errorResponse('the body is not application/json') }),
    },
  };
}

export function openApiDocument(routes: readonly AdminRoute[], version: string): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const route of routes) {
    paths[route.path] ??= {};
    (paths[route.path] as Record<string, object>)[route.method.toLowerCase()] = operationOf(route);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'sitekey-authz admin API',
      version,
      description:
        "Sites, allowlists, keys, token clients and the API-key sunset, for the organisation's people. " +
        'Every change is audited with the person as actor. Roles: viewer (read everything but keys), ' +
        'account-manager (sites, allowlists, keys, token clients, grace), admin (also brownouts and the sunset).',
    },
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: "an access token from ADMIN_ISSUER for ADMIN_AUDIENCE" } },
      schemas: { Error: ERROR_SCHEMA },
    },
    paths,
  };
}
