import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { ADMIN_PEOPLE } from '../../support/admin-issuer.js';
import { chromiumMissing, launchChromium, signInWithBrowser } from '../../support/console-browser.js';
import { startConsoleStack, type ConsoleStack } from '../../support/console-stack.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { runCli } from '../../support/service.js';

const missing = chromiumMissing();

/**
 * A value the API refuses is named beside the input it came from, in words (never a CLI flag), and the
 * input is marked invalid and described by that message; nothing is changed.
 */
describe('the console puts a refusal beside its input', { skip: missing }, () => {
  let database: TestDatabase;
  let stack: ConsoleStack;
  let browser: Browser;
  let page: Page;

  /** The message beside the input labelled `label`, which the input names as its description. */
  async function besideInput(label: string, messageId: string, said: RegExp): Promise<void> {
    const message = page.locator(`#${messageId}`);
    await message.waitFor();
    const text = (await message.textContent()) ?? '';
    assert.match(text, said);
    assert.doesNotMatch(text, /--[a-z]|sitekey-authz/, 'words, not a flag or a command');
    const input = page.getByLabel(label, { exact: true });
    assert.equal(await input.getAttribute('aria-invalid'), 'true');
    assert.equal(await input.getAttribute('aria-describedby'), messageId);
    assert.equal(await page.getByRole('alert').filter({ hasText: said }).count(), 1, 'said once, beside the input, not again in the form');
  }

  before(async () => {
    database = await freshDatabase();
    const added = await runCli(database.url, ['site', 'add', '1001', '--name', 'Acme Travel']);
    assert.equal(added.code, 0, added.stderr);
    stack = await startConsoleStack(database.url);
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
    await signInWithBrowser(page, stack.consoleBase, ADMIN_PEOPLE.manager, '/sites/1001');
    await page.getByRole('heading', { name: 'Acme Travel · site 1001' }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await stack?.close();
    await database?.drop();
  });

  it('a key expiry in the past, beside the expiry date', async () => {
    await page.getByLabel('Expires (UTC date, optional)', { exact: true }).fill('2020-01-01');
    await page.getByRole('button', { name: 'Issue key' }).click();
    await besideInput('Expires (UTC date, optional)', 'issue-expires-error', /^the expiry date: 2020-01-01T00:00:00\.000Z is in the past: a key must expire after it is issued; give a date after today, e\.g\. \d{4}-\d\d-\d\d$/);
    assert.match((await runCli(database.url, ['key', 'list', '1001'])).stdout, /site 1001 has no keys/);
  });

  it('a network with bits after its prefix, beside the address', async () => {
    await page.getByLabel('Add an address or network (CIDR)', { exact: true }).fill('10.0.0.1/8');
    await page.getByRole('button', { name: 'Add address' }).click();
    await besideInput('Add an address or network (CIDR)', 'allowlist-add-error', /"10\.0\.0\.1\/8" has bits set after the prefix; did you mean 10\.0\.0\.0\/8/);
  });

  it('every address on the internet: asked about in a dialog before anything is sent (console-confirmations.test.ts), nothing added on Cancel', async () => {
    await page.getByLabel('Add an address or network (CIDR)', { exact: true }).fill('0.0.0.0/0');
    await page.getByRole('button', { name: 'Add address' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('admits every', { exact: false }).first().waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.match((await runCli(database.url, ['ip', 'list', '1001'])).stdout, /no allowlist entry/);
  });

  it('an overlong partner name, beside the name; the site id stays unmarked', async () => {
    await page.getByRole('link', { name: 'Find a partner' }).click();
    await page.getByText('New site').click();
    await page.getByLabel('Site id', { exact: true }).fill('1003');
    await page.getByLabel('Partner name', { exact: true }).fill('n'.repeat(201));
    await page.getByRole('button', { name: 'Create site' }).click();
    await besideInput('Partner name', 'new-site-name-error', /^the name is 201 characters long; keep it to 200$/);
    assert.equal(await page.getByLabel('Site id', { exact: true }).getAttribute('aria-invalid'), null);
    assert.doesNotMatch((await runCli(database.url, ['site', 'list'])).stdout, /1003/);
  });
});
