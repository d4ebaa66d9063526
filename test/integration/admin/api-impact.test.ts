import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAdminIssuer, type AdminIssuer } from '../../support/admin-issuer.js';
import { adminApi, recordAllowedRequests, type AdminApi } from '../../support/admin-api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { startService, type RunningService } from '../../support/service.js';

/** The numbers the console's confirmations name, counted by the service from its hourly request counts. */
describe('the impact routes', () => {
  let database: TestDatabase;
  let issuer: AdminIssuer;
  let service: RunningService;
  let admin: AdminApi;
  let viewer: AdminApi;

  before(async () => {
    database = await freshDatabase();
    issuer = await startAdminIssuer();
    service = await startService({ DATABASE_URL: database.url, ...issuer.env() });
    admin = adminApi(service.adminBase ?? '', await issuer.tokenFor('admin'));
    viewer = adminApi(service.adminBase ?? '', await issuer.tokenFor('viewer'));
    for (const id of ['1001', '1002', '1003', '1004', '1005', '1006']) await admin.ok('POST', '/api/v1/sites', { id }, 201);
    await admin.ok('POST', '/api/v1/sites/1001/allowlist', { entries: ['203.0.113.0/24', '198.51.100.7'] }, 201);
    await admin.ok('POST', '/api/v1/sites/1001/keys', {}, 201);
    await admin.ok('POST', '/api/v1/sites/1001/token-clients', { clientId: 'acme-production' }, 201);
    // 1004 on tokens only, 1005 in grace, 1006 disabled: a brownout refuses none of them.
    await admin.ok('PUT', '/api/v1/sites/1004/auth-method', { method: 'tokens' });
    await admin.ok('PUT', '/api/v1/sites/1005/grace', { until: '2099-01-01' });
    await admin.ok('POST', '/api/v1/sites/1006/disable');
    await recordAllowedRequests(database.url, [
      { siteId: '1001', method: 'api_key', count: 1_414 },
      { siteId: '1001', method: 'token', count: 25 },
      { siteId: '1002', method: 'api_key', count: 7 },
      { siteId: '1004', method: 'api_key', count: 3 },
      { siteId: '1005', method: 'api_key', count: 11 },
      // Before the window: not counted.
      { siteId: '1001', method: 'api_key', count: 5, endsAt: Date.now() - 31 * 86_400_000 },
    ]);
  });

  after(async () => {
    await service?.stop();
    await issuer?.close();
    await database?.drop();
  });

  it("answers a viewer with the site's requests of the last 30 days and what it holds", async () => {
    const impact = await viewer.ok('GET', '/api/v1/sites/1001/impact');
    const { countsBegin, ...counts } = impact;
    assert.deepEqual(counts, { siteId: '1001', days: 30, keyRequests: 1_414, tokenRequests: 25, allowlistSize: 2, activeKeys: 1, tokenClients: 1, enabled: true, authMethod: 'both' });
    assert.ok(Date.now() - Date.parse(countsBegin) > 31 * 86_400_000, `the counts begin with the oldest hour held, not ${countsBegin}`);
    assert.deepEqual(
      { ...(await viewer.ok('GET', '/api/v1/sites/1003/impact?days=7')), countsBegin: null },
      { siteId: '1003', days: 7, keyRequests: 0, tokenRequests: 0, allowlistSize: 0, activeKeys: 0, tokenClients: 0, enabled: true, authMethod: 'both', countsBegin: null },
    );
  });

  it('counts whom a brownout refuses: sites that accept keys, enabled, without grace', async () => {
    const every = await viewer.ok('GET', '/api/v1/brownouts/impact');
    assert.deepEqual({ ...every, countsBegin: null }, { days: 30, sites: 3, sitesUsingKeys: 2, keyRequests: 1_421, countsBegin: null });
    const named = await viewer.ok('GET', '/api/v1/brownouts/impact?sites=1002,1004,1005');
    assert.deepEqual([named.sites, named.sitesUsingKeys, named.keyRequests], [1, 1, 7]);
    // After 1005's grace has ended, it is refused too.
    const later = await viewer.ok('GET', '/api/v1/brownouts/impact?sites=1005&from=2099-06-01T00:00:00Z');
    assert.deepEqual([later.sites, later.keyRequests], [1, 11]);
  });

  it('refuses what it cannot read, naming the parameter', async () => {
    for (const [path, status, code, field] of [
      ['/api/v1/sites/4242/impact', 404, 'SITE_NOT_FOUND', 'siteId'],
      ['/api/v1/sites/1001/impact?days=0', 400, 'COUNT_INVALID', 'days'],
      ['/api/v1/sites/1001/impact?days=91', 400, 'COUNT_INVALID', 'days'],
      ['/api/v1/brownouts/impact?sites=10x1', 400, 'SITE_ID_INVALID', 'sites'],
      ['/api/v1/brownouts/impact?sites=1002,9999', 404, 'SITE_NOT_FOUND', 'sites'],
      ['/api/v1/brownouts/impact?from=2027-01-01T00:00:00', 400, 'DATE_INVALID', 'from'],
    ] as const) {
      const answer = await viewer.call('GET', path);
      assert.equal(answer.status, status, `${path}: ${JSON.stringify(answer.body)}`);
      assert.deepEqual([answer.body.error.code, answer.body.error.field], [code, field], path);
      assert.doesNotMatch(answer.body.error.message, /--|sitekey-authz/, path);
    }
  });
});
