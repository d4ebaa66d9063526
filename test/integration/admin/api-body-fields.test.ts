import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAdminIssuer, type AdminIssuer } from '../../support/admin-issuer.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { runCli, startService, type RunningService } from '../../support/service.js';

const INHERITED_NAMES = ['__proto__', 'constructor', 'toString'];

/** A body field named after what every JavaScript object inherits is unknown like any other. */
describe('admin API bodies with the names every object inherits', () => {
  let database: TestDatabase;
  let issuer: AdminIssuer;
  let service: RunningService;
  let token = '';

  before(async () => {
    database = await freshDatabase();
    issuer = await startAdminIssuer();
    service = await startService({ DATABASE_URL: database.url, ...issuer.env() });
    token = await issuer.tokenFor('manager');
    const added = await runCli(database.url, ['site', 'add', '1001', '--name', 'Acme Travel']);
    assert.equal(added.code, 0, added.stderr);
  });

  after(async () => {
    await service?.stop();
    await issuer?.close();
    await database?.drop();
  });

  /** The body as raw JSON text: JSON.parse makes "__proto__" an own property, as a client's JSON does. */
  const post = (path: string, json: string) =>
    fetch(`${service.adminBase}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: json });

  for (const name of INHERITED_NAMES) {
    it(`refuses ${name} in POST …/keys with 400 naming it, and issues no key`, async () => {
      const answer = await post('/api/v1/sites/1001/keys', `{${JSON.stringify(name)}: {"note": "x"}}`);
      const text = await answer.text();
      assert.equal(answer.status, 400, text);
      const body = JSON.parse(text) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'INVALID_REQUEST');
      assert.match(body.error.message, new RegExp(`unknown field "${name}"`));
      const keys = await runCli(database.url, ['key', 'list', '1001', '--json']);
      assert.deepEqual(JSON.parse(keys.stdout), [], 'no key issued');
    });

    it(`refuses ${name} in POST /api/v1/sites with 400 naming it, and adds no site`, async () => {
      const answer = await post('/api/v1/sites', `{"id": "2002", ${JSON.stringify(name)}: "x"}`);
      const text = await answer.text();
      assert.equal(answer.status, 400, text);
      assert.match((JSON.parse(text) as { error: { message: string } }).error.message, new RegExp(`unknown field "${name}"`));
      const sites = await runCli(database.url, ['site', 'list', '--json']);
      assert.deepEqual((JSON.parse(sites.stdout) as Array<{ siteId: string }>).map((site) => site.siteId), ['1001'], 'no site added');
    });
  }
});
