import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import pg from 'pg';
import { ADMIN_PEOPLE } from '../../support/admin-issuer.js';
import { chromiumMissing, launchChromium, signInWithBrowser } from '../../support/console-browser.js';
import { startConsoleStack, type ConsoleStack } from '../../support/console-stack.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

const missing = chromiumMissing();
const PARTNERS = 130;
const KEYS = 105;

/**
 * Lists longer than a page in a real browser: the sites of Find a partner and one site's keys show a
 * first page, "Next" shows the rest and "First page" goes back; a search by name finds one site.
 */
describe('paging through long lists in the console', { skip: missing }, () => {
  let database: TestDatabase;
  let stack: ConsoleStack;
  let browser: Browser;
  let page: Page;

  const rows = (table: string) => page.locator(`${table} tbody tr`);

  before(async () => {
    database = await freshDatabase();
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    try {
      await sql.query("INSERT INTO sites (id, name) SELECT n, 'Partner ' || n FROM generate_series(2001, 2000 + $1::int) AS n", [PARTNERS]);
      await sql.query("INSERT INTO sites (id, name) VALUES (3001, 'Zebra Zoo')");
      await sql.query(
        `INSERT INTO api_keys (site_id, key_sha256, last_five, note)
         SELECT 2001, sha256(convert_to('key ' || n, 'UTF8')), lpad(n::text, 5, '0'), 'key ' || n FROM generate_series(1, $1::int) AS n`,
        [KEYS],
      );
    } finally {
      await sql.end();
    }
    stack = await startConsoleStack(database.url);
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
    await signInWithBrowser(page, stack.consoleBase, ADMIN_PEOPLE.manager);
  });

  after(async () => {
    await browser?.close();
    await stack?.close();
    await database?.drop();
  });

  it('shows the first page of sites, the rest after Next, and the first page again', async () => {
    await page.getByRole('heading', { name: 'Find a partner' }).waitFor();
    await page.getByText('Showing sites 1–100, more on the next page.').waitFor();
    assert.equal(await rows('table').count(), 100);
    await page.getByRole('link', { name: '2001', exact: true }).waitFor();

    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText(`Showing sites 101–${PARTNERS + 1}, the last of them.`).waitFor();
    assert.equal(await rows('table').count(), PARTNERS + 1 - 100);
    await page.getByRole('link', { name: '3001', exact: true }).waitFor();
    assert.equal(await page.getByRole('link', { name: '2001', exact: true }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Next' }).count(), 0, 'no Next on the last page');

    await page.getByRole('button', { name: 'First page' }).click();
    await page.getByText('Showing sites 1–100, more on the next page.').waitFor();
    await page.getByRole('link', { name: '2001', exact: true }).waitFor();
  });

  it('finds a site by its name', async () => {
    await page.getByLabel('Site id or partner name').fill('zebra');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/\?query=zebra$/);
    await page.getByRole('link', { name: '2001', exact: true }).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: '3001', exact: true }).waitFor();
    assert.equal(await rows('table').count(), 1);
    assert.equal(await page.getByRole('button', { name: 'Next' }).count(), 0, 'one page, no pager');
  });

  it("pages through a site's keys", async () => {
    await page.goto(`${stack.consoleBase}/sites/2001`);
    await page.getByRole('heading', { name: 'Partner 2001 · site 2001' }).waitFor();
    const keys = page.getByRole('navigation', { name: 'Pages of keys' });
    await keys.getByText('Showing keys 1–100, more on the next page.').waitFor();
    assert.equal(await rows('section[aria-labelledby="keys-heading"] table').count(), 100);
    await keys.getByRole('button', { name: 'Next' }).click();
    await keys.getByText(`Showing keys 101–${KEYS}, the last of them.`).waitFor();
    assert.equal(await rows('section[aria-labelledby="keys-heading"] table').count(), KEYS - 100);
    await page.getByRole('cell', { name: `key ${KEYS}`, exact: true }).waitFor();
    await keys.getByRole('button', { name: 'First page' }).click();
    await keys.getByText('Showing keys 1–100, more on the next page.').waitFor();
    await page.getByRole('cell', { name: 'key 1', exact: true }).waitFor();
  });
});
