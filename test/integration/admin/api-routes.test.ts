import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import pg from 'pg';
import { ADMIN_ROUTES } from '../../../src/admin/admin-routes.js';
import { MIGRATION_ROWS } from '../../../src/admin/api-schemas.js';
import { answerSchema, schemaProblem, type AdminRoute } from '../../../src/admin/route-table.js';
import { startAdminIssuer, type AdminIssuer, type AdminPersonName } from '../../support/admin-issuer.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { authorizationClient, check, verdict } from '../../support/envoy-client.js';
import { eventually } from '../../support/eventually.js';
import { runCli, startService, type RunningService } from '../../support/service.js';

const MANAGER = 'manager@example.test (sub 248289761002)';
const ADMIN = 'admin@example.test (sub 248289761003)';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface Answer {
  readonly status: number;
  readonly body: any;
  readonly text: string;
}

/** An answer against the schema its route publishes in the OpenAPI document (a page's items, for a list). */
function answerProblem(route: AdminRoute, body: unknown): string | undefined {
  return schemaProblem(body, answerSchema(route));
}

/** A route as the table names it: `METHOD /path`. */
const label = (route: AdminRoute) => `${route.method} ${route.path}`;

/**
 * The routes each test below calls, by its name: a test fails when it calls routes it does not declare
 * here, or no longer calls one it does, and the last test holds that each route of the table is some
 * test's, whichever of them run and in whatever order.
 */
const ROUTES_OF_TESTS: Readonly<Record<string, readonly string[]>> = {
  'onboards a partner: site, allowlist, a key shown once that a Check accepts, and its revocation': [
    'GET /api/v1/me', 'POST /api/v1/sites', 'GET /api/v1/sites', 'POST /api/v1/sites/{siteId}/allowlist', 'GET /api/v1/sites/{siteId}/allowlist',
    'POST /api/v1/sites/{siteId}/keys', 'GET /api/v1/sites/{siteId}/keys', 'POST /api/v1/sites/{siteId}/keys/{keyId}/revoke', 'POST /api/v1/sites/{siteId}/keys/import', 'GET /api/v1/audit',
  ],
  'shows a full key in no answer but the one that issued it, nor in its own log': [
    'GET /api/v1/sites', 'GET /api/v1/sites/{siteId}', 'GET /api/v1/sites/{siteId}/keys', 'GET /api/v1/audit', 'GET /api/v1/reports/migration', 'GET /api/v1/reports/denials',
  ],
  "changes a site's state, method, grace, tokens and token clients, each audited with the person": [
    'POST /api/v1/sites/{siteId}/disable', 'POST /api/v1/sites/{siteId}/enable', 'PUT /api/v1/sites/{siteId}/auth-method', 'PUT /api/v1/sites/{siteId}/grace',
    'DELETE /api/v1/sites/{siteId}/grace', 'POST /api/v1/sites/{siteId}/revoke-tokens', 'POST /api/v1/sites/{siteId}/token-clients', 'GET /api/v1/token-clients',
    'GET /api/v1/sites/{siteId}', 'DELETE /api/v1/token-clients/{clientId}', 'DELETE /api/v1/sites/{siteId}/allowlist/{entry}', 'GET /api/v1/audit',
  ],
  'runs brownouts and the sunset for an admin, and the reports for a viewer': [
    'POST /api/v1/brownouts', 'GET /api/v1/brownouts', 'POST /api/v1/brownouts/{brownoutId}/cancel', 'PUT /api/v1/sunset', 'GET /api/v1/sunset',
    'GET /api/v1/reports/migration', 'GET /api/v1/reports/denials', 'GET /api/v1/audit',
  ],
  'refuses bad values with a stable code and the field, in words with no flag, and the CLI refuses them with the same code': [
    'POST /api/v1/sites', 'GET /api/v1/sites', 'GET /api/v1/sites/{siteId}', 'POST /api/v1/sites/{siteId}/keys', 'POST /api/v1/sites/{siteId}/keys/import',
    'POST /api/v1/sites/{siteId}/keys/{keyId}/revoke', 'POST /api/v1/sites/{siteId}/keys/{keyId}/roll', 'POST /api/v1/sites/{siteId}/allowlist',
    'DELETE /api/v1/sites/{siteId}/allowlist/{entry}', 'PUT /api/v1/sites/{siteId}/auth-method', 'PUT /api/v1/sites/{siteId}/grace',
    'POST /api/v1/sites/{siteId}/token-clients', 'DELETE /api/v1/token-clients/{clientId}', 'POST /api/v1/sites/{siteId}/token-clients/create',
    'POST /api/v1/token-clients/{clientId}/rotate-secret', 'POST /api/v1/brownouts', 'POST /api/v1/brownouts/{brownoutId}/cancel', 'GET /api/v1/sites/{siteId}/impact',
    'GET /api/v1/brownouts/impact', 'PUT /api/v1/sunset', 'GET /api/v1/reports/denials', 'GET /api/v1/reports/migration', 'GET /api/v1/audit',
  ],
  'admits every address only when the request says so, and warns of it': [
    'POST /api/v1/sites/{siteId}/allowlist', 'GET /api/v1/sites/{siteId}/allowlist', 'DELETE /api/v1/sites/{siteId}/allowlist/{entry}',
  ],
  'warns that a key issued near the sunset stops working then, and refuses a grace or brownout already over': [
    'PUT /api/v1/sunset', 'POST /api/v1/sites/{siteId}/keys', 'POST /api/v1/sites/{siteId}/keys/import', 'POST /api/v1/sites/{siteId}/keys/{keyId}/revoke',
  ],
  'counts for a viewer what a change would refuse (the counts: api-impact.test.ts)': ['GET /api/v1/sites/{siteId}/impact', 'GET /api/v1/brownouts/impact'],
  'rolls a key: the new one shown once and accepted, the old one accepted until the end it was given': [
    'POST /api/v1/sites/{siteId}/keys', 'POST /api/v1/sites/{siteId}/keys/{keyId}/roll', 'GET /api/v1/audit',
  ],
};

/**
 * Every route of the admin API against the real service, database and provider: an account manager
 * onboards a partner, an admin runs the sunset, and each change lands in the audit trail with the
 * person as actor. Bad values are refused with a code and the field, as the CLI refuses them.
 */
describe('the admin API routes, as the CLI does them', () => {
  let database: TestDatabase;
  let issuer: AdminIssuer;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;
  const tokens = new Map<AdminPersonName, string>();
  /** The routes the running test called. */
  let calledByTest = new Set<string>();
  let issuedKey = '';
  let issuedKeyId = '';

  async function api(person: AdminPersonName, method: string, path: string, body?: unknown): Promise<Answer> {
    const response = await fetch(`${service.adminBase}${path}`, {
      method,
      headers: { authorization: `Bearer ${tokens.get(person)}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    const route = ADMIN_ROUTES.find((candidate) => candidate.method === method && new RegExp(`^${candidate.path.replace(/\{\w+\}/g, '[^/]+')}$`).test(path.split('?')[0] ?? ''));
    if (route !== undefined) calledByTest.add(label(route));
    const answer = { status: response.status, body: text === '' ? undefined : JSON.parse(text), text };
    if (route !== undefined && response.ok) assert.equal(answerProblem(route, answer.body), undefined, `${method} ${path} answers as its route declares`);
    return answer;
  }

  async function ok(person: AdminPersonName, method: string, path: string, body?: unknown, status = 200): Promise<any> {
    const answer = await api(person, method, path, body);
    assert.equal(answer.status, status, `${method} ${path}: ${answer.text}`);
    return answer.body;
  }

  /** The newest audit entry of `action`, through the API and through `audit list`. */
  async function audited(action: string, actor: string, siteId: string | null): Promise<void> {
    const { items } = await ok('viewer', 'GET', `/api/v1/audit?action=${action}&limit=1`);
    assert.equal(items[0]?.action, action, `an audit row for ${action}`);
    assert.equal(items[0]?.actor, actor, `${action} by ${actor}`);
    assert.equal(items[0]?.siteId, siteId);
    const listed = await runCli(database.url, ['audit', 'list', '--action', action, '--limit', '1', '--json']);
    assert.equal((JSON.parse(listed.stdout) as Array<{ actor: string }>)[0]?.actor, actor, '`audit list` shows the person');
  }

  before(async () => {
    database = await freshDatabase();
    issuer = await startAdminIssuer();
    service = await startService({ DATABASE_URL: database.url, ...issuer.env(), LAST_USED_FLUSH_SECONDS: '1' });
    client = authorizationClient(service.grpcTarget);
    for (const person of ['viewer', 'manager', 'admin'] as const) tokens.set(person, await issuer.tokenFor(person));
  });

  beforeEach(() => {
    calledByTest = new Set();
  });

  afterEach((test) => {
    const declared = ROUTES_OF_TESTS[test.name] ?? [];
    assert.deepEqual([...calledByTest].filter((route) => !declared.includes(route)), [], `routes "${test.name}" calls and ROUTES_OF_TESTS does not name`);
    assert.deepEqual(declared.filter((route) => !calledByTest.has(route)), [], `routes ROUTES_OF_TESTS names that "${test.name}" no longer calls`);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await issuer?.close();
    await database?.drop();
  });

  it('onboards a partner: site, allowlist, a key shown once that a Check accepts, and its revocation', async () => {
    assert.equal((await ok('manager', 'GET', '/api/v1/me')).email, 'manager@example.test');
    const site = await ok('manager', 'POST', '/api/v1/sites', { id: '1001', name: 'Acme Travel' }, 201);
    assert.deepEqual(
      { id: site.id, name: site.name, enabled: site.enabled, activeKeys: site.activeKeys, allowlistSize: site.allowlistSize, authMethod: site.authMethod, graceUntil: site.graceUntil },
      { id: '1001', name: 'Acme Travel', enabled: true, activeKeys: 0, allowlistSize: 0, authMethod: 'both', graceUntil: null },
    );
    await audited('site.add', MANAGER, '1001');
    const found = await ok('viewer', 'GET', '/api/v1/sites?query=acme');
    assert.deepEqual(found.items.map((item: { id: string }) => item.id), ['1001']);
    assert.equal(found.next, null);

    const allowed = await ok('manager', 'POST', '/api/v1/sites/1001/allowlist', { entries: ['203.0.113.0/24', '2001:db8:42::/48'] }, 201);
    assert.deepEqual(allowed.added, ['203.0.113.0/24', '2001:db8:42::/48']);
    await audited('ip.allow', MANAGER, '1001');
    assert.deepEqual((await ok('viewer', 'GET', '/api/v1/sites/1001/allowlist')).items.map((entry: { cidr: string }) => entry.cidr), ['203.0.113.0/24', '2001:db8:42::/48']);

    const issued = await ok('manager', 'POST', '/api/v1/sites/1001/keys', { note: 'production', expires: '2099-01-31' }, 201);
    assert.match(issued.key, UUID);
    assert.equal(issued.maskedKey, `*****${issued.key.slice(-5)}`);
    assert.equal(issued.expiresAt, '2099-01-31T00:00:00.000Z');
    assert.equal(issued.note, 'production');
    assert.equal('apiKey' in issued, false);
    issuedKey = issued.key;
    issuedKeyId = issued.keyId;
    await audited('key.issue', MANAGER, '1001');

    const request = { authorization: `1001:${issuedKey}`, body: JSON.stringify({ siteid: 1001, apikey: issuedKey }) };
    await eventually('the issued key to be accepted by a Check', async () => verdict(await check(client, request)), (answer) => answer === 'allow', 5_000);

    const listed = await ok('manager', 'GET', '/api/v1/sites/1001/keys');
    assert.deepEqual(listed.items.map((key: { keyId: string; maskedKey: string; status: string }) => [key.keyId, key.maskedKey, key.status]), [[issuedKeyId, issued.maskedKey, 'active']]);

    const revoked = await ok('manager', 'POST', `/api/v1/sites/1001/keys/${issuedKeyId}/revoke`);
    assert.equal(revoked.status, 'revoked');
    assert.equal(revoked.changed, true);
    await audited('key.revoke', MANAGER, '1001');
    await eventually('the revoked key to be refused', async () => verdict(await check(client, request)), (answer) => answer === 102, 5_000);

    const imported = await ok('manager', 'POST', '/api/v1/sites/1001/keys/import', { key: '6f1c3a52-8d0e-4b7a-9c21-5e3f4a6b7c8d', note: 'from the old gateway' }, 201);
    assert.equal(imported.maskedKey, '*****b7c8d');
    assert.equal('key' in imported || 'apiKey' in imported, false, 'an imported key is not echoed');
    await audited('key.import', MANAGER, '1001');
  });

  it('shows a full key in no answer but the one that issued it, nor in its own log', async () => {
    assert.ok(issuedKey !== '');
    for (const path of ['/api/v1/sites', '/api/v1/sites/1001', '/api/v1/sites/1001/keys', '/api/v1/audit', '/api/v1/reports/migration', '/api/v1/reports/migration?sites=true', '/api/v1/reports/denials']) {
      const answer = await api('admin', 'GET', path);
      assert.equal(answer.status, 200, path);
      assert.ok(!answer.text.includes(issuedKey), `${path} does not show the key`);
      assert.ok(!answer.text.includes('6f1c3a52-8d0e-4b7a-9c21-5e3f4a6b7c8d'), `${path} does not show the imported key`);
    }
    assert.ok(!service.output().includes(issuedKey), 'the service log holds no key');
    for (const token of tokens.values()) assert.ok(!service.output().includes(token), 'the service log holds no token');
  });

  it("changes a site's state, method, grace, tokens and token clients, each audited with the person", async () => {
    assert.equal((await ok('manager', 'POST', '/api/v1/sites/1001/disable')).enabled, false);
    await audited('site.disable', MANAGER, '1001');
    assert.equal((await ok('manager', 'POST', '/api/v1/sites/1001/enable')).enabled, true);
    await audited('site.enable', MANAGER, '1001');

    assert.equal((await ok('manager', 'PUT', '/api/v1/sites/1001/auth-method', { method: 'tokens' })).authMethod, 'tokens');
    await audited('site.auth', MANAGER, '1001');
    await ok('manager', 'PUT', '/api/v1/sites/1001/auth-method', { method: 'both' });

    assert.equal((await ok('manager', 'PUT', '/api/v1/sites/1001/grace', { until: '2027-03-31' })).graceUntil, '2027-03-31T00:00:00.000Z');
    await audited('site.grace', MANAGER, '1001');
    assert.equal((await ok('viewer', 'GET', '/api/v1/sites/1001')).graceUntil, '2027-03-31T00:00:00.000Z');
    assert.equal((await ok('manager', 'DELETE', '/api/v1/sites/1001/grace')).graceUntil, null);
    await audited('site.grace.clear', MANAGER, '1001');

    assert.match((await ok('manager', 'POST', '/api/v1/sites/1001/revoke-tokens')).tokensNotBefore, /^\d{4}-/);
    await audited('site.revoke-tokens', MANAGER, '1001');

    const registered = await ok('manager', 'POST', '/api/v1/sites/1001/token-clients', { clientId: 'partner-1001', note: 'Acme production' }, 201);
    assert.equal(registered.clientId, 'partner-1001');
    await audited('token-client.add', MANAGER, '1001');
    assert.deepEqual((await ok('viewer', 'GET', '/api/v1/token-clients?siteId=1001')).items.map((c: { clientId: string }) => c.clientId), ['partner-1001']);
    const detail = await ok('viewer', 'GET', '/api/v1/sites/1001');
    assert.deepEqual(detail.tokenClients.map((c: { clientId: string }) => c.clientId), ['partner-1001']);
    assert.deepEqual(detail.allowlist.map((entry: { cidr: string }) => entry.cidr), ['203.0.113.0/24', '2001:db8:42::/48']);
    assert.equal((await ok('manager', 'DELETE', '/api/v1/token-clients/partner-1001')).clientId, 'partner-1001');
    await audited('token-client.remove', MANAGER, '1001');

    const removed = await ok('manager', 'DELETE', '/api/v1/sites/1001/allowlist/2001%3Adb8%3A42%3A%3A%2F48');
    assert.deepEqual(removed.removed, ['2001:db8:42::/48']);
    await audited('ip.revoke', MANAGER, '1001');
  });

  it('runs brownouts and the sunset for an admin, and the reports for a viewer', async () => {
    const brownout = await ok('admin', 'POST', '/api/v1/brownouts', { from: 'now', until: '2099-01-01T00:00:00Z', sites: ['1001'], note: 'rehearsal', dryRun: true }, 201);
    assert.deepEqual([brownout.siteIds, brownout.dryRun, brownout.note], [['1001'], true, 'rehearsal']);
    await audited('brownout.add', ADMIN, null);
    assert.equal((await ok('viewer', 'GET', '/api/v1/brownouts')).items.length, 1);
    assert.equal((await ok('admin', 'POST', `/api/v1/brownouts/${brownout.brownoutId}/cancel`)).state, 'cancelled');
    await audited('brownout.cancel', ADMIN, null);

    const policy = await ok('admin', 'PUT', '/api/v1/sunset', { at: '2027-06-30T00:00:00Z', guide: 'https://developers.example.com/migrate' });
    assert.deepEqual([policy.sunsetAt, policy.guideUrl, policy.source], ['2027-06-30T00:00:00.000Z', 'https://developers.example.com/migrate', 'database']);
    await audited('sunset.set', ADMIN, null);
    assert.equal((await ok('admin', 'PUT', '/api/v1/sunset', { guide: null })).guideUrl, null);
    assert.equal((await ok('viewer', 'GET', '/api/v1/sunset')).sunsetAt, '2027-06-30T00:00:00.000Z');

    const migration = await ok('viewer', 'GET', '/api/v1/reports/migration?since=30');
    assert.ok(migration.items.length > 0, 'the key used in a Check is in the report');
    for (const row of migration.items) assert.equal(schemaProblem(row, MIGRATION_ROWS.perKey), undefined);
    const bySite = await ok('viewer', 'GET', '/api/v1/reports/migration?sites=true');
    assert.ok(bySite.items.length > 0);
    for (const row of bySite.items) assert.equal(schemaProblem(row, MIGRATION_ROWS.perSite), undefined);
    // A fresh database: whatever serve has counted so far began inside the 30 days asked for, as the CLI warns.
    if (bySite.countsBegin === null) assert.deepEqual(bySite.warnings, []);
    else {
      assert.ok(Date.now() - Date.parse(bySite.countsBegin) < 2 * 3_600_000, `counts from this test's checks, not ${bySite.countsBegin}`);
      assert.equal(bySite.warnings.length, 1);
      assert.ok(bySite.warnings[0].startsWith(`the oldest request counts held are from ${bySite.countsBegin}: token requests, key requests and the share on tokens count from then`), bySite.warnings[0]);
    }
    assert.equal((await ok('viewer', 'GET', '/api/v1/reports/migration')).countsBegin, undefined, 'the per-key report has no request counts');
    await eventually(
      "the revoked key's refusal in the denial report",
      () => ok('viewer', 'GET', '/api/v1/reports/denials?site=1001&since=1&limit=10'),
      (report: { items: Array<{ errorId: number }> }) => report.items.some((row) => row.errorId === 102),
      10_000,
    );
  });

  it('refuses bad values with a stable code and the field, in words with no flag, and the CLI refuses them with the same code', async () => {
    const privateJwks = { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y', d: 'secret' }] };
    // method, path, body, the CLI's arguments (none: the CLI has no such value), code, field, stdin
    const cases: Array<[string, string, unknown, string[] | undefined, string, string | undefined, string?]> = [
      ['POST', '/api/v1/sites', { id: '01001' }, ['site', 'add', '01001'], 'SITE_ID_INVALID', 'id'],
      ['POST', '/api/v1/sites', { id: '1002', name: 'two\nlines' }, ['site', 'add', '1002', '--name', 'two\nlines'], 'TEXT_HAS_CONTROL', 'name'],
      ['POST', '/api/v1/sites', { id: '1001' }, ['site', 'add', '1001'], 'SITE_EXISTS', 'id'],
      ['POST', '/api/v1/sites', { id: 1001 }, undefined, 'INVALID_REQUEST', 'id'],
      ['GET', '/api/v1/sites/4242', undefined, ['key', 'list', '4242'], 'SITE_NOT_FOUND', 'siteId'],
      ['GET', '/api/v1/sites/abc', undefined, ['key', 'list', 'abc'], 'SITE_ID_INVALID', 'siteId'],
      ['POST', '/api/v1/sites/1001/keys', { expires: '2001-01-01' }, ['key', 'issue', '1001', '--expires', '2001-01-01'], 'DATE_IN_PAST', 'expires'],
      ['POST', '/api/v1/sites/1001/keys', { expires: 'tomorrow' }, ['key', 'issue', '1001', '--expires', 'tomorrow'], 'DATE_INVALID', 'expires'],
      ['POST', '/api/v1/sites/1001/keys', { note: 'x'.repeat(501) }, ['key', 'issue', '1001', '--note', 'x'.repeat(501)], 'TEXT_TOO_LONG', 'note'],
      ['POST', '/api/v1/sites/1001/keys/import', { key: 'not-a-key' }, ['key', 'import', '1001'], 'KEY_INVALID', 'key', 'not-a-key'],
      ['POST', '/api/v1/sites/1001/keys/import', { key: issuedKey }, ['key', 'import', '1001'], 'KEY_DUPLICATE', 'key', issuedKey],
      ['POST', '/api/v1/sites/1001/keys/abc/revoke', undefined, ['key', 'revoke', '1001', 'abc'], 'KEY_ID_INVALID', 'keyId'],
      ['POST', '/api/v1/sites/1001/keys/999/revoke', undefined, ['key', 'revoke', '1001', '999'], 'KEY_NOT_FOUND', 'keyId'],
      ['POST', '/api/v1/sites/1001/allowlist', { entries: ['300.1.1.1', '10.0.0.1/33'] }, ['ip', 'allow', '1001', '300.1.1.1', '10.0.0.1/33'], 'ENTRY_INVALID', 'entries'],
      ['POST', '/api/v1/sites/1001/allowlist', { entries: [] }, undefined, 'ENTRIES_EMPTY', 'entries'],
      ['POST', '/api/v1/sites/1001/allowlist', { entries: ['0.0.0.0/0'] }, ['ip', 'allow', '1001', '0.0.0.0/0'], 'ANY_ADDRESS_UNCONFIRMED', 'entries'],
      ['POST', '/api/v1/sites/1001/allowlist', { entries: ['::/0'], allowAnyAddress: false }, ['ip', 'allow', '1001', '::/0'], 'ANY_ADDRESS_UNCONFIRMED', 'entries'],
      ['DELETE', '/api/v1/sites/1001/allowlist/198.51.100.7', undefined, ['ip', 'revoke', '1001', '198.51.100.7'], 'CIDR_NOT_ON_ALLOWLIST', 'entries'],
      ['PUT', '/api/v1/sites/1001/auth-method', { method: 'keys' }, ['site', 'auth', '1001', 'keys'], 'AUTH_METHOD_INVALID', 'method'],
      ['PUT', '/api/v1/sites/1001/grace', { until: '2026-02-30' }, ['site', 'grace', '1001', '--until', '2026-02-30'], 'DATE_INVALID', 'until'],
      ['PUT', '/api/v1/sites/1001/grace', { until: '2001-01-01' }, ['site', 'grace', '1001', '--until', '2001-01-01'], 'DATE_IN_PAST', 'until'],
      ['POST', '/api/v1/sites/1001/token-clients', { clientId: 'has space' }, ['token-client', 'add', '1001', 'has space'], 'CLIENT_ID_INVALID', 'clientId'],
      ['DELETE', '/api/v1/token-clients/nobody', undefined, ['token-client', 'remove', 'nobody'], 'TOKEN_CLIENT_NOT_FOUND', 'clientId'],
      ['POST', '/api/v1/sites/1001/keys/999/roll', undefined, ['key', 'roll', '1001', '999'], 'KEY_NOT_FOUND', 'keyId'],
      ['POST', '/api/v1/sites/1001/keys/999/roll', { oldExpires: '2001-01-01' }, ['key', 'roll', '1001', '999', '--old-expires', '2001-01-01'], 'DATE_IN_PAST', 'oldExpires'],
      // This service has no TOKEN_ISSUER: creating at the issuer is off, and says what to set.
      ['POST', '/api/v1/sites/1001/token-clients/create', {}, ['token-client', 'create', '1001'], 'REGISTRATION_OFF', undefined],
      ['POST', '/api/v1/sites/1001/token-clients/create', { jwks: privateJwks }, undefined, 'JWKS_PRIVATE_KEY', 'jwks'],
      ['POST', '/api/v1/sites/1001/token-clients/create', { jwksUri: 'http://partner.example/jwks' }, ['token-client', 'create', '1001', '--jwks-uri', 'http://partner.example/jwks'], 'JWKS_URI_INVALID', 'jwksUri'],
      ['POST', '/api/v1/token-clients/nobody/rotate-secret', undefined, ['token-client', 'rotate-secret', 'nobody'], 'REGISTRATION_OFF', undefined],
      ['POST', '/api/v1/brownouts', { from: 'now', until: '2001-01-01' }, ['brownout', 'add', '--from', 'now', '--until', '2001-01-01'], 'UNTIL_NOT_AFTER_FROM', 'until'],
      ['POST', '/api/v1/brownouts', { from: '2001-01-01', until: '2001-01-02' }, ['brownout', 'add', '--from', '2001-01-01', '--until', '2001-01-02'], 'DATE_IN_PAST', 'until'],
      ['POST', '/api/v1/brownouts', { from: '2027-01-02', until: '2027-01-01' }, ['brownout', 'add', '--from', '2027-01-02', '--until', '2027-01-01'], 'UNTIL_NOT_AFTER_FROM', 'until'],
      ['POST', '/api/v1/brownouts', { from: 'now', until: '2099-01-01', sites: ['x'] }, ['brownout', 'add', '--from', 'now', '--until', '2099-01-01', '--site', 'x'], 'SITE_ID_INVALID', 'sites'],
      ['POST', '/api/v1/brownouts', { from: 'now', until: '2099-01-01', sites: [] }, undefined, 'SITES_EMPTY', 'sites'],
      ['POST', '/api/v1/brownouts', { from: 'now', until: '2099-01-01', sites: ['9999'] }, ['brownout', 'add', '--from', 'now', '--until', '2099-01-01', '--site', '9999'], 'SITE_NOT_FOUND', 'sites'],
      ['POST', '/api/v1/sites/1001/keys', null, undefined, 'INVALID_REQUEST', undefined],
      ['POST', '/api/v1/sites/1001/allowlist', { entries: ['0.0.0.0/1', '128.0.0.0/1'] }, ['ip', 'allow', '1001', '0.0.0.0/1', '128.0.0.0/1'], 'ANY_ADDRESS_UNCONFIRMED', 'entries'],
      ['GET', '/api/v1/sites/1001/impact?days=0', undefined, undefined, 'COUNT_INVALID', 'days'],
      ['GET', '/api/v1/brownouts/impact?from=2027-02-30', undefined, undefined, 'DATE_INVALID', 'from'],
      ['GET', '/api/v1/brownouts/impact?sites=1001,abc', undefined, undefined, 'SITE_ID_INVALID', 'sites'],
      ['POST', '/api/v1/brownouts/x/cancel', undefined, ['brownout', 'cancel', 'x'], 'BROWNOUT_ID_INVALID', 'brownoutId'],
      ['POST', '/api/v1/brownouts/999/cancel', undefined, ['brownout', 'cancel', '999'], 'BROWNOUT_NOT_FOUND', 'brownoutId'],
      ['PUT', '/api/v1/sunset', { guide: 'http://developers.example.com' }, ['sunset', 'set', '--guide', 'http://developers.example.com'], 'GUIDE_INVALID', 'guide'],
      ['PUT', '/api/v1/sunset', { at: '2027-02-30' }, ['sunset', 'set', '--at', '2027-02-30'], 'DATE_INVALID', 'at'],
      ['PUT', '/api/v1/sunset', {}, undefined, 'NOTHING_TO_CHANGE', undefined],
      ['GET', '/api/v1/reports/denials?since=0', undefined, ['report', 'denials', '--since', '0'], 'COUNT_INVALID', 'since'],
      ['GET', '/api/v1/reports/denials?site=4242', undefined, ['report', 'denials', '--site', '4242'], 'SITE_NOT_FOUND', 'site'],
      ['GET', '/api/v1/reports/denials?limit=all', undefined, undefined, 'INVALID_REQUEST', 'limit'],
      ['GET', '/api/v1/reports/migration?since=99999', undefined, ['report', 'migration', '--since', '99999'], 'COUNT_INVALID', 'since'],
      ['GET', '/api/v1/reports/migration?sites=yes', undefined, undefined, 'FLAG_INVALID', 'sites'],
      ['GET', '/api/v1/audit?action=Key', undefined, ['audit', 'list', '--action', 'Key'], 'ACTION_INVALID', 'action'],
      ['GET', '/api/v1/audit?cursor=nope', undefined, undefined, 'CURSOR_INVALID', 'cursor'],
      // "a" and an id past PostgreSQL's bigint: refused as a cursor, never handed to the query.
      ['GET', `/api/v1/audit?cursor=${Buffer.from('a9999999999999999999', 'latin1').toString('base64url')}`, undefined, undefined, 'CURSOR_INVALID', 'cursor'],
      ['GET', '/api/v1/sites?color=red', undefined, undefined, 'INVALID_REQUEST', 'color'],
    ];
    for (const [method, path, body, cliArgs, code, field, stdin] of cases) {
      const what = `${method} ${path} ${JSON.stringify(body ?? null).slice(0, 80)}`;
      const answer = await api('admin', method, path, body);
      assert.deepEqual([answer.body?.error?.code, answer.body?.error?.field], [code, field], `${what}: ${answer.text}`);
      for (const said of [answer.body.error.message, answer.body.error.consoleMessage ?? '']) {
        assert.doesNotMatch(said, /--[a-z]|sitekey-authz/, `${what} speaks in words, not in flags or commands`);
      }
      const expectedStatus = /NOT_FOUND$/.test(code) ? 404 : /EXISTS$|DUPLICATE$|NOT_ON_ALLOWLIST$|REGISTRATION_OFF$/.test(code) ? 409 : 400;
      assert.equal(answer.status, expectedStatus, what);
      if (cliArgs === undefined) continue;
      const cli = await runCli(database.url, [...cliArgs, '--json'], stdin);
      assert.equal(cli.code, expectedStatus === 400 ? 2 : 1, `${cliArgs.join(' ')}: ${cli.stderr}`);
      const cliError = (JSON.parse(cli.stderr) as { error: { code: string; field?: string; message: string } }).error;
      assert.deepEqual([cliError.code, cliError.field], [code, field], `sitekey-authz ${cliArgs.join(' ')} refuses as the API does: ${cli.stderr}`);
    }
  });

  it('admits every address only when the request says so, and warns of it', async () => {
    const refused = await api('manager', 'POST', '/api/v1/sites/1001/allowlist', { entries: ['203.0.113.64/26', '0.0.0.0/0'] });
    assert.equal(refused.status, 400);
    assert.match(refused.body.error.message, /0\.0\.0\.0\/0 would admit every address on the internet/);
    assert.ok(!(await ok('viewer', 'GET', '/api/v1/sites/1001/allowlist')).items.some((entry: { cidr: string }) => entry.cidr === '203.0.113.64/26'), 'nothing was added');
    const added = await ok('manager', 'POST', '/api/v1/sites/1001/allowlist', { entries: ['::/0'], allowAnyAddress: true }, 201);
    assert.deepEqual(added.added, ['::/0']);
    assert.match(added.warnings.join('\n'), /::\/0 admits every IPv6 address: the allowlist no longer restricts site 1001/);
    await ok('manager', 'DELETE', `/api/v1/sites/1001/allowlist/${encodeURIComponent('::/0')}`);
  });

  it('warns that a key issued near the sunset stops working then, and refuses a grace or brownout already over', async () => {
    const near = new Date(Date.now() + 20 * 86_400_000).toISOString();
    await ok('admin', 'PUT', '/api/v1/sunset', { at: near });
    try {
      const issued = await ok('manager', 'POST', '/api/v1/sites/1001/keys', { note: 'near the sunset' }, 201);
      assert.ok(issued.warnings.some((warning: string) => warning.includes(`stops working at the API-key sunset on ${near}`)), issued.warnings.join('\n'));
      const imported = await ok('manager', 'POST', '/api/v1/sites/1001/keys/import', { key: '0b7f4c1e-2d3a-4b5c-8d6e-7f8091a2b3c4', expires: '2099-01-01' }, 201);
      assert.equal(imported.warnings.length, 1);
      const short = await ok('manager', 'POST', '/api/v1/sites/1001/keys', { expires: new Date(Date.now() + 86_400_000).toISOString() }, 201);
      assert.ok(!short.warnings.some((warning: string) => warning.includes('sunset')), 'a key that expires before the sunset is not warned of');
      const cli = await runCli(database.url, ['key', 'issue', '1001']);
      assert.equal(cli.code, 0, cli.stderr);
      assert.match(cli.stderr, new RegExp(`warning: this key stops working at the API-key sunset on ${near.replace(/\./g, '\\.')}`));
      for (const keyId of [issued.keyId, imported.keyId, short.keyId]) await ok('manager', 'POST', `/api/v1/sites/1001/keys/${keyId}/revoke`);
    } finally {
      await ok('admin', 'PUT', '/api/v1/sunset', { at: '2027-06-30T00:00:00Z' });
    }
  });

  it('counts for a viewer what a change would refuse (the counts: api-impact.test.ts)', async () => {
    const impact = await ok('viewer', 'GET', '/api/v1/sites/1001/impact');
    assert.deepEqual([impact.siteId, impact.days, impact.allowlistSize], ['1001', 30, 1]);
    const brownout = await ok('viewer', 'GET', '/api/v1/brownouts/impact?sites=1001');
    assert.deepEqual([brownout.days, brownout.sites], [30, 1]);
  });

  it('rolls a key: the new one shown once and accepted, the old one accepted until the end it was given', async () => {
    const old = await ok('manager', 'POST', '/api/v1/sites/1001/keys', { note: 'to be rolled' }, 201);
    const rolled = await ok('manager', 'POST', `/api/v1/sites/1001/keys/${old.keyId}/roll`, { note: 'rolled' }, 201);
    assert.match(rolled.key, UUID);
    assert.equal(rolled.maskedKey, `*****${rolled.key.slice(-5)}`);
    assert.equal(rolled.note, 'rolled');
    assert.equal(rolled.replaced.keyId, old.keyId);
    const week = Date.parse(rolled.replaced.expiresAt) - Date.now();
    assert.ok(week > 6.9 * 86_400_000 && week <= 7 * 86_400_000, `the old key ends in 7 days by default: ${rolled.replaced.expiresAt}`);
    assert.deepEqual(rolled.warnings, []);
    await audited('key.roll', MANAGER, '1001');
    const request = (key: string) => ({ authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) });
    await eventually('the new key to be accepted', async () => verdict(await check(client, request(rolled.key))), (answer) => answer === 'allow', 5_000);
    assert.equal(verdict(await check(client, request(old.key))), 'allow', 'the old key works until its end');

    const sooner = await ok('manager', 'POST', `/api/v1/sites/1001/keys/${rolled.keyId}/roll`, { oldExpires: new Date(Date.now() + 86_400_000).toISOString() }, 201);
    const later = await ok('manager', 'POST', `/api/v1/sites/1001/keys/${rolled.keyId}/roll`, { oldExpires: '2099-01-31' }, 201);
    assert.equal(later.replaced.expiresAt, sooner.replaced.expiresAt, 'a key that already ends sooner keeps its end');
    assert.match(later.warnings[0] ?? '', new RegExp(`old key ${rolled.keyId} .* keeps that expiry`));

    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    try {
      await sql.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [old.keyId]);
    } finally {
      await sql.end();
    }
    await eventually('the old key to be refused once it has expired', async () => verdict(await check(client, request(old.key))), (answer) => answer === 102, 5_000);
    const again = await api('manager', 'POST', `/api/v1/sites/1001/keys/${old.keyId}/roll`, {});
    assert.equal(again.status, 409, again.text);
    assert.equal(again.body.error.code, 'KEY_NOT_ACTIVE');
  });

  it('has a test that calls each route of the table', () => {
    const declared = new Set(Object.values(ROUTES_OF_TESTS).flat());
    assert.deepEqual(ADMIN_ROUTES.filter((route) => route.role !== 'public' && !declared.has(label(route))).map(label), [], 'routes no test calls');
    const table = new Set(ADMIN_ROUTES.map(label));
    assert.deepEqual([...declared].filter((route) => !table.has(route)), [], 'routes ROUTES_OF_TESTS names that are not in the table');
  });
});
