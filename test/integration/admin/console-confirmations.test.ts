import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
import { ADMIN_PEOPLE } from '../../support/admin-issuer.js';
import { adminApi, changesSentBy, recordAllowedRequests, type AdminApi, type SentChange } from '../../support/admin-api.js';
import { chromiumMissing, launchChromium, signInWithBrowser } from '../../support/console-browser.js';
import { startConsoleStack, type ConsoleStack } from '../../support/console-stack.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

const missing = chromiumMissing();
const DAY_MS = 86_400_000;

/**
 * Each change that refuses someone asks first, in a dialog that says whom it refuses in the service's
 * own counts; Cancel sends nothing; the widest changes keep their button disabled until the site id
 * (or "every site") is typed; confirming makes the change.
 */
describe('console confirmations say what will happen', { skip: missing }, () => {
  let database: TestDatabase;
  let stack: ConsoleStack;
  let browser: Browser;
  let page: Page;
  let admin: AdminApi;
  /** Every change the page sent to the API. */
  let sent: SentChange[] = [];

  const site = () => admin.ok('GET', '/api/v1/sites/1001');

  /** The open dialog once its numbers have loaded, and its text. */
  async function dialogSaying(pattern: RegExp): Promise<Locator> {
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await dialog.getByText('Loading…').waitFor({ state: 'detached' });
    assert.match((await dialog.innerText()).replace(/\s+/g, ' '), pattern);
    return dialog;
  }

  /** Cancel closes the dialog and sends nothing. */
  async function cancel(dialog: Locator): Promise<void> {
    const before = sent.length;
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    assert.deepEqual(sent.slice(before), [], 'Cancel sends nothing');
  }

  /** The typed confirmation: the button stays disabled until the text matches. */
  async function typeToConfirm(dialog: Locator, confirmLabel: string, words: string): Promise<void> {
    const confirm = dialog.getByRole('button', { name: confirmLabel, exact: true });
    assert.equal(await confirm.isDisabled(), true, 'disabled before anything is typed');
    await dialog.getByRole('textbox').fill(words.slice(0, -1));
    assert.equal(await confirm.isDisabled(), true, 'disabled while it does not match');
    await dialog.getByRole('textbox').fill(words);
    await dialog.getByRole('button', { name: confirmLabel, exact: true, disabled: false }).waitFor();
  }

  before(async () => {
    database = await freshDatabase();
    stack = await startConsoleStack(database.url);
    admin = adminApi(stack.consoleBase, await stack.issuer.tokenFor('admin'));
    for (const id of ['1001', '1002', '1003']) await admin.ok('POST', '/api/v1/sites', { id, ...(id === '1001' ? { name: 'Acme Travel' } : {}) }, 201);
    await admin.ok('POST', '/api/v1/sites/1001/allowlist', { entries: ['203.0.113.0/24'] }, 201);
    await admin.ok('POST', '/api/v1/sites/1001/keys', { note: 'production' }, 201);
    await admin.ok('POST', '/api/v1/sites/1001/token-clients', { clientId: 'acme-production' }, 201);
    await recordAllowedRequests(database.url, [
      { siteId: '1001', method: 'api_key', count: 1_414 },
      { siteId: '1001', method: 'token', count: 2_345 },
      { siteId: '1002', method: 'api_key', count: 500 },
      // Counts held from before the window, so that its 30 days are covered (else the dialog says where they begin).
      { siteId: '1003', method: 'token', count: 1, endsAt: Date.now() - 40 * DAY_MS },
    ]);
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
    sent = changesSentBy(page);
    await signInWithBrowser(page, stack.consoleBase, ADMIN_PEOPLE.admin, '/sites/1001');
    await page.getByRole('heading', { name: 'Acme Travel · site 1001' }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await stack?.close();
    await database?.drop();
  });

  it('Disable site: names the requests it refuses, asks for the site id typed, Cancel keeps it enabled', async () => {
    await page.getByRole('button', { name: 'Disable site' }).click();
    const dialog = await dialogSaying(/Site 1001 sent 1,414 API-key requests and 2,345 access-token requests in the last 30 days\. Disabling it refuses every one of its requests \(101\)/);
    await typeToConfirm(dialog, 'Disable site', '1001');
    await cancel(dialog);
    assert.equal((await site()).enabled, true);

    await page.getByRole('button', { name: 'Disable site' }).click();
    const again = await dialogSaying(/1,414 API-key requests/);
    assert.equal(await again.getByRole('textbox').inputValue(), '', 'the typed confirmation starts empty again');
    await typeToConfirm(again, 'Disable site', '1001');
    await again.getByRole('button', { name: 'Disable site' }).click();
    await page.getByText('Site disabled: its requests are refused (101).').waitFor();
    assert.equal((await site()).enabled, false);
    await page.getByRole('button', { name: 'Enable site' }).click();
    await page.getByText('Site enabled.').waitFor();
    assert.equal((await site()).enabled, true);
  });

  it('tokens only: names the API-key requests it refuses (105); Cancel keeps both methods', async () => {
    await page.getByLabel('Access tokens only (keys refused)').check();
    await page.getByRole('button', { name: 'Save method' }).click();
    const dialog = await dialogSaying(/Site 1001 sent 1,414 API-key requests in the last 30 days; switching it to tokens only refuses them \(error 105\)/);
    await cancel(dialog);
    assert.equal((await site()).authMethod, 'both');
    await page.getByRole('button', { name: 'Save method' }).click();
    await (await dialogSaying(/1,414 API-key requests/)).getByRole('button', { name: 'Switch to tokens only' }).click();
    await page.getByText('The site now accepts access tokens only.').waitFor();
    assert.equal((await site()).authMethod, 'tokens');
    await page.getByLabel('API keys and access tokens').check();
    await page.getByRole('button', { name: 'Save method' }).click();
    await page.getByText('The site now accepts API keys and access tokens.').waitFor();
    assert.equal((await site()).authMethod, 'both');
  });

  it('revoking a key: names the site’s API-key requests and that it is the last active key', async () => {
    await page.getByRole('button', { name: /^Revoke key / }).click();
    const dialog = await dialogSaying(/Site 1001 sent 1,414 API-key requests in the last 30 days; this is its last active key: every API-key request of site 1001 will be refused/);
    await cancel(dialog);
    const [key] = (await admin.ok('GET', '/api/v1/sites/1001/keys')).items;
    assert.equal(key.status, 'active');
    await page.getByRole('button', { name: /^Revoke key / }).click();
    await (await dialogSaying(/last active key/)).getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText(/revoked: it is refused from now on/).waitFor();
    assert.equal((await admin.ok('GET', '/api/v1/sites/1001/keys')).items[0].status, 'revoked');
  });

  it('refusing tokens issued so far: names the token requests and asks for the site id typed', async () => {
    await page.getByRole('button', { name: 'Refuse tokens issued so far' }).click();
    const dialog = await dialogSaying(/Site 1001 sent 2,345 access-token requests in the last 30 days\. Every token issued to its 1 token client until now is refused \(106\)/);
    await typeToConfirm(dialog, 'Refuse tokens issued so far', '1001');
    await cancel(dialog);
    assert.equal((await site()).tokensNotBefore, null);
    await page.getByRole('button', { name: 'Refuse tokens issued so far' }).click();
    const again = await dialogSaying(/2,345 access-token requests/);
    await typeToConfirm(again, 'Refuse tokens issued so far', '1001');
    await again.getByRole('button', { name: 'Refuse tokens issued so far' }).click();
    await page.getByText('Every access token issued so far for this site is refused from now on.').waitFor();
    assert.match((await site()).tokensNotBefore, /^\d{4}-/);
  });

  it('removing a token client: names the token requests and that it is the last client', async () => {
    await page.getByRole('button', { name: 'Remove token client acme-production' }).click();
    const dialog = await dialogSaying(/The access tokens of client acme-production are refused from now on \(107\).*Site 1001 sent 2,345 access-token requests in the last 30 days; this is its last token client/);
    await cancel(dialog);
    assert.deepEqual((await site()).tokenClients.map((client: { clientId: string }) => client.clientId), ['acme-production']);
    await page.getByRole('button', { name: 'Remove token client acme-production' }).click();
    await (await dialogSaying(/last token client/)).getByRole('button', { name: 'Remove token client' }).click();
    await page.getByText(/Token client acme-production removed/).waitFor();
    assert.deepEqual((await site()).tokenClients, []);
  });

  it('removing the last address: says that every request of the site will be refused (103)', async () => {
    await page.getByRole('button', { name: 'Remove 203.0.113.0/24' }).click();
    const dialog = await dialogSaying(/Removing 203\.0\.113\.0\/24 leaves no address: every request of site 1001 will be refused \(103\)\. It sent 3,759 requests in the last 30 days\./);
    await cancel(dialog);
    assert.deepEqual((await site()).allowlist.map((entry: { cidr: string }) => entry.cidr), ['203.0.113.0/24']);
    await page.getByRole('button', { name: 'Remove 203.0.113.0/24' }).click();
    await (await dialogSaying(/leaves no address/)).getByRole('button', { name: 'Remove address' }).click();
    await page.getByText('Removed 203.0.113.0/24.', { exact: false }).waitFor();
    assert.deepEqual((await site()).allowlist, []);
  });

  it('every address (0.0.0.0/0, ::/0) takes a second step with a warning, then sends allowAnyAddress', async () => {
    for (const everyone of ['::/0', '0.0.0.0/0']) {
      await page.getByLabel('Add an address or network (CIDR)').fill(everyone);
      await page.getByRole('button', { name: 'Add address' }).click();
      await cancel(await dialogSaying(new RegExp(`Warning: ${everyone.replace(/\./g, '\\.')} admits every address on the internet\\. Anyone who holds a key or a token of site 1001 can use it from anywhere`)));
    }
    assert.deepEqual((await site()).allowlist, []);
    await page.getByRole('button', { name: 'Add address' }).click();
    await (await dialogSaying(/0\.0\.0\.0\/0 admits every address/)).getByRole('button', { name: 'Allow every address' }).click();
    await page.getByText('Added 0.0.0.0/0.', { exact: false }).waitFor();
    assert.deepEqual(sent.at(-1), { method: 'POST', path: '/api/v1/sites/1001/allowlist', body: { entries: ['0.0.0.0/0'], allowAnyAddress: true } });
    assert.deepEqual((await site()).allowlist.map((entry: { cidr: string }) => entry.cidr), ['0.0.0.0/0']);
  });

  it('a brownout: counts the sites whose keys it refuses; for every site, asks for "every site" typed', async () => {
    await page.getByRole('link', { name: 'Brownouts' }).click();
    await page.getByRole('heading', { name: 'Brownouts' }).waitFor();
    const local = (at: number) => new Date(at).toISOString().slice(0, 16);
    await page.getByLabel('From (UTC)').fill(local(Date.now() + DAY_MS));
    await page.getByLabel('Until (UTC)').fill(local(Date.now() + 2 * DAY_MS));
    await page.getByRole('button', { name: 'Schedule brownout' }).click();
    const dialog = await dialogSaying(/This brownout refuses API keys for 3 sites from .* \(error 105\): 2 sites of them sent 1,914 API-key requests in the last 30 days\./);
    await typeToConfirm(dialog, 'Schedule brownout', 'every site');
    await cancel(dialog);
    assert.deepEqual((await admin.ok('GET', '/api/v1/brownouts')).items, []);

    await page.getByRole('button', { name: 'Schedule brownout' }).click();
    const again = await dialogSaying(/refuses API keys for 3 sites/);
    await typeToConfirm(again, 'Schedule brownout', 'every site');
    await again.getByRole('button', { name: 'Schedule brownout' }).click();
    await page.getByText(/Brownout \d+ scheduled\./).waitFor();
    assert.deepEqual((await admin.ok('GET', '/api/v1/brownouts')).items.map((brownout: { siteIds: unknown }) => brownout.siteIds), [null]);

    await page.getByLabel('Sites (ids, empty for every site)').fill('1002');
    await page.getByRole('button', { name: 'Schedule brownout' }).click();
    const named = await dialogSaying(/This brownout refuses API keys for 1 site from .*: 1 site of them sent 500 API-key requests in the last 30 days\./);
    assert.equal(await named.getByRole('textbox').count(), 0, 'named sites need no typed confirmation');
    await named.getByRole('button', { name: 'Schedule brownout' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await page.getByRole('cell', { name: '1002', exact: true }).waitFor();
    assert.equal((await admin.ok('GET', '/api/v1/brownouts')).items.length, 2);
  });
});
