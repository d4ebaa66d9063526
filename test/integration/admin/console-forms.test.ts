import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { ADMIN_PEOPLE } from '../../support/admin-issuer.js';
import { adminApi, changesSentBy, type AdminApi, type SentChange } from '../../support/admin-api.js';
import { chromiumMissing, launchChromium, signInWithBrowser } from '../../support/console-browser.js';
import { startConsoleStack, type ConsoleStack } from '../../support/console-stack.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

const missing = chromiumMissing();
const SUNSET_AT = '2026-12-31T23:59:59.000Z';
const GRACE_UNTIL = '2027-03-31T12:34:56.000Z';

/**
 * A console form sends what the person changed and nothing else: the sunset saved with only a guide
 * added keeps its instant to the second (it once went back as midnight), and a form saved unchanged
 * sends nothing at all.
 */
describe('console forms change only what the person changed', { skip: missing }, () => {
  let database: TestDatabase;
  let stack: ConsoleStack;
  let browser: Browser;
  let page: Page;
  let admin: AdminApi;
  /** Every change the page sent to the API. */
  let sent: SentChange[] = [];

  before(async () => {
    database = await freshDatabase();
    stack = await startConsoleStack(database.url);
    admin = adminApi(stack.consoleBase, await stack.issuer.tokenFor('admin'));
    await admin.ok('PUT', '/api/v1/sunset', { at: SUNSET_AT, enforce: true });
    await admin.ok('POST', '/api/v1/sites', { id: '1001', name: 'Acme Travel' }, 201);
    await admin.ok('PUT', '/api/v1/sites/1001/grace', { until: GRACE_UNTIL });
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
    sent = changesSentBy(page);
    await signInWithBrowser(page, stack.consoleBase, ADMIN_PEOPLE.admin, '/sunset');
  });

  after(async () => {
    await browser?.close();
    await stack?.close();
    await database?.drop();
  });

  it('shows the sunset to the second, in UTC', async () => {
    await page.getByRole('heading', { name: 'Sunset of API keys' }).waitFor();
    assert.equal(await page.getByLabel('Keys stop working at (UTC), date').inputValue(), '2026-12-31');
    assert.equal(await page.getByLabel('Keys stop working at (UTC), time to the second').inputValue(), '23:59:59');
    await page.getByText('2026-12-31 23:59:59 UTC').waitFor();
  });

  it('saves a guide added alone without moving the sunset or its enforcement', async () => {
    await page.getByLabel('Migration guide (https URL)').fill('https://developers.example.com/migrate');
    const saved = page.waitForResponse((response) => response.request().method() === 'PUT' && new URL(response.url()).pathname === '/api/v1/sunset');
    await page.getByRole('button', { name: 'Save sunset' }).click();
    assert.equal((await saved).status(), 200);
    await page.getByText('Sunset saved.').waitFor();
    assert.deepEqual(sent.at(-1), { method: 'PUT', path: '/api/v1/sunset', body: { guide: 'https://developers.example.com/migrate' } });
    const policy = await admin.ok('GET', '/api/v1/sunset');
    assert.deepEqual([policy.sunsetAt, policy.enforce, policy.guideUrl], [SUNSET_AT, true, 'https://developers.example.com/migrate']);
  });

  it('says so and sends nothing when nothing changed', async () => {
    const before = sent.length;
    await page.getByRole('button', { name: 'Save sunset' }).click();
    await page.getByText('Nothing changed: nothing was sent.').waitFor();
    assert.equal(sent.length, before);
  });

  it('sends only the instant when only the time changes, to the second', async () => {
    await page.getByLabel('Keys stop working at (UTC), time to the second').fill('22:30:15');
    const saved = page.waitForResponse((response) => response.request().method() === 'PUT' && new URL(response.url()).pathname === '/api/v1/sunset');
    await page.getByRole('button', { name: 'Save sunset' }).click();
    assert.equal((await saved).status(), 200);
    assert.deepEqual(sent.at(-1)?.body, { at: '2026-12-31T22:30:15.000Z' });
    const policy = await admin.ok('GET', '/api/v1/sunset');
    assert.deepEqual([policy.sunsetAt, policy.enforce, policy.guideUrl], ['2026-12-31T22:30:15.000Z', true, 'https://developers.example.com/migrate']);
  });

  it("shows a site's grace to the second and sends nothing when it is saved unchanged", async () => {
    await page.goto(`${stack.consoleBase}/sites/1001`);
    await page.getByRole('heading', { name: 'Acme Travel · site 1001' }).waitFor();
    assert.equal(await page.getByLabel('Keys keep working until (UTC), date').inputValue(), '2027-03-31');
    assert.equal(await page.getByLabel('Keys keep working until (UTC), time to the second').inputValue(), '12:34:56');
    const before = sent.length;
    await page.getByRole('button', { name: 'Save grace' }).click();
    await page.getByText('Nothing changed: nothing was sent.').waitFor();
    assert.equal(sent.length, before);
    assert.equal((await admin.ok('GET', '/api/v1/sites/1001')).graceUntil, GRACE_UNTIL);
  });

  it('saves a grace moved by a day with its time kept', async () => {
    await page.getByLabel('Keys keep working until (UTC), date').fill('2027-04-01');
    await page.getByRole('button', { name: 'Save grace' }).click();
    await page.getByText('Grace saved.').waitFor();
    assert.deepEqual(sent.at(-1), { method: 'PUT', path: '/api/v1/sites/1001/grace', body: { until: '2027-04-01T12:34:56.000Z' } });
    assert.equal((await admin.ok('GET', '/api/v1/sites/1001')).graceUntil, '2027-04-01T12:34:56.000Z');
  });
});
