import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ADMIN_ROUTES, OPENAPI_PATH } from '../../src/admin/admin-routes.js';
import { ApiError } from '../../src/admin/api-error.js';
import { openApiDocument, operationId } from '../../src/admin/openapi.js';
import { actorText } from '../../src/store/audit-actor.js';
import { ADMIN_ROLES, auditActor, hasRole, rolesOf, type AdminPrincipal, type AdminRole } from '../../src/admin/principal.js';
import { KEY } from '../../src/admin/api-schemas.js';
import { checkedBody, checkQuery, matchRoute, paginate, schemaProblem, type AdminRoute } from '../../src/admin/route-table.js';
import { SubjectRateLimit } from '../../src/admin/subject-rate-limit.js';

type Document = { openapi: string; paths: Record<string, Record<string, { operationId: string; 'x-required-role': string; parameters: Array<{ name: string; in: string }>; security?: unknown[] }>> };
const document = openApiDocument(ADMIN_ROUTES, '1.0.0') as Document;

const principal = (...roles: AdminRole[]): AdminPrincipal => ({ subject: 's', roles: new Set(roles) });
const route = (path: string, method = 'GET') => matchRoute(ADMIN_ROUTES, method, path);

describe('the route table and the OpenAPI document read from it', () => {
  it('lists every route of the table in the document, with its role, and nothing else', () => {
    const listed = Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));
    assert.deepEqual(listed.sort(), ADMIN_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
    for (const r of ADMIN_ROUTES) assert.equal(document.paths[r.path]?.[r.method.toLowerCase()]?.['x-required-role'], r.role);
    assert.equal(document.openapi, '3.1.0');
  });

  it('declares each path parameter of each route, and paging on the lists', () => {
    for (const r of ADMIN_ROUTES) {
      const parameters = document.paths[r.path]?.[r.method.toLowerCase()]?.parameters ?? [];
      const inPath = [...r.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => name);
      assert.deepEqual(parameters.filter((p) => p.in === 'path').map((p) => p.name), inPath, r.path);
      if (r.paginated === true) assert.ok(parameters.some((p) => p.name === 'cursor'), r.path);
    }
  });

  it('publishes each route\'s answer, closed to fields it does not declare, and null where a value may be missing', () => {
    const sites = document.paths['/api/v1/sites']?.['get'] as unknown as { responses: Record<string, { content: { 'application/json': { schema: any } } }> };
    const item = sites.responses['200']?.content['application/json'].schema.properties.items.items;
    assert.equal(item.additionalProperties, false);
    assert.deepEqual(item.properties.graceUntil.type, ['string', 'null']);
    assert.ok(item.required.includes('id'));
    const issue = document.paths['/api/v1/sites/{siteId}/keys']?.['post'] as unknown as { responses: Record<string, { content: { 'application/json': { schema: any } } }> };
    assert.equal(issue.responses['201']?.content['application/json'].schema.properties.key.type, 'string');
  });

  it('finds an answer that strays from its schema: an undeclared field, a missing one, a wrong type, a null where none may be', () => {
    const key = { keyId: '12', siteId: '1001', maskedKey: '*****b7c8d', status: 'active', createdAt: '2026-11-24T10:00:00.000Z', expiresAt: null, revokedAt: null, lastUsedAt: null, note: '' };
    assert.equal(schemaProblem(key, KEY), undefined);
    assert.match(schemaProblem({ ...key, apiKey: 'x' }, KEY) ?? '', /unknown field "apiKey"/);
    const { note: _note, ...withoutNote } = key;
    assert.match(schemaProblem(withoutNote, KEY) ?? '', /needs the field "note"/);
    assert.match(schemaProblem({ ...key, status: 'gone' }, KEY) ?? '', /must be one of active, expired, revoked/);
    assert.match(schemaProblem({ ...key, createdAt: null }, KEY) ?? '', /"createdAt" must be a string, not null/);
  });

  it('gives each operation a unique id', () => {
    const ids = ADMIN_ROUTES.map(operationId);
    assert.equal(new Set(ids).size, ids.length, ids.join(' '));
    assert.equal(operationId(ADMIN_ROUTES.find((r) => r.path === '/api/v1/sites/{siteId}/keys/{keyId}/revoke') as AdminRoute), 'postSitesKeysRevoke');
  });

  it('has the routes the issue names, with the roles it gives them', () => {
    const roleOf = (method: string, path: string) => ADMIN_ROUTES.find((r) => r.method === method && r.path === path)?.role;
    assert.equal(roleOf('GET', OPENAPI_PATH), 'public');
    assert.equal(document.paths[OPENAPI_PATH]?.['get']?.security?.length, 0, 'the document is public');
    assert.equal(roleOf('GET', '/api/v1/sites'), 'viewer');
    assert.equal(roleOf('POST', '/api/v1/sites/{siteId}/keys'), 'account-manager');
    assert.equal(roleOf('GET', '/api/v1/sites/{siteId}/keys'), 'account-manager', 'a viewer reads everything but keys');
    assert.equal(roleOf('POST', '/api/v1/brownouts'), 'admin');
    assert.equal(roleOf('PUT', '/api/v1/sunset'), 'admin');
    assert.equal(roleOf('PUT', '/api/v1/sites/{siteId}/grace'), 'account-manager');
  });

  it('matches a path to its route, decoding parameters, and says which methods a path has', () => {
    const revoke = route('/api/v1/sites/1001/allowlist/203.0.113.0%2F24', 'DELETE');
    assert.equal(revoke.match?.route.path, '/api/v1/sites/{siteId}/allowlist/{entry}');
    assert.deepEqual(revoke.match?.params, { siteId: '1001', entry: '203.0.113.0/24' });
    assert.equal(route('/api/v1/sites/1001/keys/import', 'POST').match?.route.path, '/api/v1/sites/{siteId}/keys/import');
    assert.equal(route('/api/v1/nothing').match, undefined);
    assert.deepEqual(route('/api/v1/nothing').allowed, []);
    assert.deepEqual(route('/api/v1/sunset', 'PATCH').allowed, ['GET', 'PUT']);
    assert.throws(() => route('/api/v1/sites/%E0%A4%A'), ApiError);
  });

  it("refuses the names every object inherits (__proto__, constructor, toString) as unknown fields, as JSON.parse gives them", () => {
    const issueKey = ADMIN_ROUTES.find((r) => r.method === 'POST' && r.path === '/api/v1/sites/{siteId}/keys') as AdminRoute;
    const addSite = ADMIN_ROUTES.find((r) => r.method === 'POST' && r.path === '/api/v1/sites') as AdminRoute;
    for (const name of ['__proto__', 'constructor', 'toString']) {
      assert.throws(() => checkedBody(issueKey, JSON.parse(`{${JSON.stringify(name)}: {}}`)), new RegExp(`unknown field "${name}"`), `POST keys with ${name}`);
      assert.throws(() => checkedBody(addSite, JSON.parse(`{"id": "1001", ${JSON.stringify(name)}: "x"}`)), new RegExp(`unknown field "${name}"`), `POST sites with ${name}`);
    }
  });

  it('checks bodies and query parameters against the route', () => {
    const addSite = ADMIN_ROUTES.find((r) => r.method === 'POST' && r.path === '/api/v1/sites') as AdminRoute;
    assert.deepEqual(checkedBody(addSite, { id: '1001' }), { id: '1001' });
    assert.throws(() => checkedBody(addSite, undefined), /needs the field "id"/);
    assert.throws(() => checkedBody(addSite, { id: '1', extra: 1 }), /unknown field "extra"/);
    const disable = ADMIN_ROUTES.find((r) => r.path === '/api/v1/sites/{siteId}/disable') as AdminRoute;
    assert.deepEqual(checkedBody(disable, undefined), {});
    assert.throws(() => checkedBody(disable, { force: true }), /send no fields/);
    const sites = ADMIN_ROUTES.find((r) => r.method === 'GET' && r.path === '/api/v1/sites') as AdminRoute;
    assert.deepEqual(checkQuery(sites, new URLSearchParams('limit=5')), { limit: 5, cursor: undefined });
    assert.deepEqual(checkQuery(sites, new URLSearchParams('')), { limit: 100, cursor: undefined });
    assert.throws(() => checkQuery(sites, new URLSearchParams('limit=1001')), /from 1 to 1000/);
    assert.throws(() => checkQuery(sites, new URLSearchParams('query=a&query=b')), /more than once/);
  });

  it('pages a list and refuses a cursor it did not make', () => {
    const items = [1, 2, 3, 4, 5];
    const first = paginate(items, { limit: 2, cursor: undefined });
    assert.deepEqual(first.items, [1, 2]);
    const second = paginate(items, { limit: 2, cursor: first.next ?? undefined });
    const third = paginate(items, { limit: 2, cursor: second.next ?? undefined });
    assert.deepEqual([second.items, third.items, third.next], [[3, 4], [5], null]);
    assert.throws(() => paginate(items, { limit: 2, cursor: 'bogus' }), /cursor is not one this API gave/);
  });
});

describe('roles', () => {
  it('rank admin above account-manager above viewer', () => {
    const table: Array<[AdminRole[], AdminRole, boolean]> = [
      [['viewer'], 'viewer', true],
      [['viewer'], 'account-manager', false],
      [['account-manager'], 'viewer', true],
      [['account-manager'], 'admin', false],
      [['admin'], 'account-manager', true],
      [[], 'viewer', false],
    ];
    for (const [held, needed, allowed] of table) assert.equal(hasRole(principal(...held), needed), allowed, `${held.join(',')} for ${needed}`);
  });

  it('are read from an array or a space-separated claim, ignoring roles that are not ours', () => {
    assert.deepEqual([...rolesOf(['viewer', 'superuser'])], ['viewer']);
    assert.deepEqual([...rolesOf('account-manager admin')], ['account-manager', 'admin']);
    assert.deepEqual([...rolesOf(42)], []);
    assert.deepEqual(ADMIN_ROLES, ['viewer', 'account-manager', 'admin']);
  });

  it('name the person in the audit trail by subject, and the verified e-mail apart from it', () => {
    assert.deepEqual(auditActor({ subject: '248289761001', email: 'alice@example.test', roles: new Set() }), { kind: 'admin-token', subject: '248289761001', email: 'alice@example.test' });
    assert.deepEqual(auditActor({ subject: '248289761001', roles: new Set() }), { kind: 'admin-token', subject: '248289761001' });
    assert.equal(actorText(auditActor({ subject: '248289761001', email: 'alice@example.test', roles: new Set() })), 'alice@example.test (sub 248289761001)');
    assert.equal(actorText(auditActor({ subject: '248289761001', roles: new Set() })), 'sub 248289761001');
  });
});

describe('the rate limit per person', () => {
  it('lets a burst through, then one request per refill, each person on their own', () => {
    let now = 0;
    const limit = new SubjectRateLimit(3, 1, 100, () => now);
    assert.deepEqual([limit.take('a'), limit.take('a'), limit.take('a')], [0, 0, 0]);
    assert.equal(limit.take('a'), 1);
    assert.equal(limit.take('b'), 0);
    now = 1_000;
    assert.equal(limit.take('a'), 0);
    assert.equal(limit.take('a'), 1);
  });
});
