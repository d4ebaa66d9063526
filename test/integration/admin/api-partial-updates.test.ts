import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_ROUTES } from '../../../src/admin/admin-routes.js';
import { startAdminIssuer, type AdminIssuer } from '../../support/admin-issuer.js';
import { adminApi, type AdminApi } from '../../support/admin-api.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { startService, type RunningService } from '../../support/service.js';

const SUNSET_AT = '2026-12-31T23:59:59.000Z';
const GUIDE = 'https://developers.example.com/migrate';

/**
 * A PUT changes the fields its body names and nothing else: a field left out keeps its value, and a
 * body the route refuses changes nothing. One case per PUT route of the table, so that a new one
 * fails here until it is tested.
 */
describe('the admin API’s PUTs leave absent fields as they are', () => {
  let database: TestDatabase;
  let issuer: AdminIssuer;
  let service: RunningService;
  let admin: AdminApi;

  /** Everything the site routes show of a site, its allowlist and token clients included. */
  const site = async () => {
    const { allowlist, tokenClients, ...rest } = await admin.ok('GET', '/api/v1/sites/1001');
    return { ...rest, allowlist: allowlist.map((entry: { cidr: string }) => entry.cidr), tokenClients: tokenClients.map((client: { clientId: string }) => client.clientId) };
  };
  const sunset = async () => {
    const { sunsetAt, enforce, guideUrl } = await admin.ok('GET', '/api/v1/sunset');
    return { sunsetAt, enforce, guideUrl };
  };

  before(async () => {
    database = await freshDatabase();
    issuer = await startAdminIssuer();
    service = await startService({ DATABASE_URL: database.url, ...issuer.env() });
    admin = adminApi(service.adminBase ?? '', await issuer.tokenFor('admin'));
    await admin.ok('POST', '/api/v1/sites', { id: '1001', name: 'Acme Travel' }, 201);
    await admin.ok('POST', '/api/v1/sites/1001/allowlist', { entries: ['203.0.113.0/24'] }, 201);
    await admin.ok('POST', '/api/v1/sites/1001/token-clients', { clientId: 'acme-production' }, 201);
    await admin.ok('PUT', '/api/v1/sites/1001/grace', { until: '2027-03-31T12:34:56Z' });
    await admin.ok('POST', '/api/v1/sites/1001/revoke-tokens');
    await admin.ok('PUT', '/api/v1/sunset', { at: SUNSET_AT, enforce: true, guide: GUIDE });
  });

  after(async () => {
    await service?.stop();
    await issuer?.close();
    await database?.drop();
  });

  it('covers every PUT route of the table', () => {
    const puts = ADMIN_ROUTES.filter((route) => route.method === 'PUT').map((route) => route.path).sort();
    assert.deepEqual(puts, ['/api/v1/sites/{siteId}/auth-method', '/api/v1/sites/{siteId}/grace', '/api/v1/sunset']);
  });

  it('PUT /api/v1/sunset changes only the fields it names: the instant kept to the second', async () => {
    assert.deepEqual(await sunset(), { sunsetAt: SUNSET_AT, enforce: true, guideUrl: GUIDE });
    await admin.ok('PUT', '/api/v1/sunset', { guide: 'https://developers.example.com/tokens' });
    assert.deepEqual(await sunset(), { sunsetAt: SUNSET_AT, enforce: true, guideUrl: 'https://developers.example.com/tokens' });
    await admin.ok('PUT', '/api/v1/sunset', { enforce: false });
    assert.deepEqual(await sunset(), { sunsetAt: SUNSET_AT, enforce: false, guideUrl: 'https://developers.example.com/tokens' });
    await admin.ok('PUT', '/api/v1/sunset', { at: '2027-01-15T08:30:01Z' });
    assert.deepEqual(await sunset(), { sunsetAt: '2027-01-15T08:30:01.000Z', enforce: false, guideUrl: 'https://developers.example.com/tokens' });
    await admin.ok('PUT', '/api/v1/sunset', { guide: null });
    assert.deepEqual(await sunset(), { sunsetAt: '2027-01-15T08:30:01.000Z', enforce: false, guideUrl: null });
  });

  it('PUT /api/v1/sunset with nothing to change is refused and changes nothing', async () => {
    const before = await sunset();
    assert.equal((await admin.call('PUT', '/api/v1/sunset', {})).status, 400);
    assert.deepEqual(await sunset(), before);
  });

  it('PUT …/auth-method changes the method and nothing else of the site', async () => {
    const before = await site();
    assert.equal(before.authMethod, 'both');
    await admin.ok('PUT', '/api/v1/sites/1001/auth-method', { method: 'tokens' });
    assert.deepEqual(await site(), { ...before, authMethod: 'tokens' });
    assert.equal((await admin.call('PUT', '/api/v1/sites/1001/auth-method', {})).status, 400, 'no method: refused');
    assert.deepEqual(await site(), { ...before, authMethod: 'tokens' });
    await admin.ok('PUT', '/api/v1/sites/1001/auth-method', { method: 'both' });
    assert.deepEqual(await site(), before);
  });

  it('PUT …/grace changes the grace and nothing else of the site', async () => {
    const before = await site();
    assert.equal(before.graceUntil, '2027-03-31T12:34:56.000Z');
    await admin.ok('PUT', '/api/v1/sites/1001/grace', { until: '2027-04-30T23:59:59Z' });
    assert.deepEqual(await site(), { ...before, graceUntil: '2027-04-30T23:59:59.000Z' });
    assert.equal((await admin.call('PUT', '/api/v1/sites/1001/grace', {})).status, 400, 'no until: refused');
    assert.deepEqual(await site(), { ...before, graceUntil: '2027-04-30T23:59:59.000Z' });
  });
});
