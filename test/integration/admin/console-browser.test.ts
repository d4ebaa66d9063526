import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { maskApiKey } from '../../../src/decision/api-key.js';
import { ADMIN_PEOPLE } from '../../support/admin-issuer.js';
import { chromiumMissing, launchChromium, signInWithBrowser } from '../../support/console-browser.js';
import { startConsoleStack, type ConsoleStack } from '../../support/console-stack.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { authorizationClient, check, verdict } from '../../support/envoy-client.js';
import { eventually } from '../../support/eventually.js';
import { startTestIssuer, TokenRequestRefused, type TestIssuer } from '../../support/oidc-issuer.js';
import { runCli } from '../../support/service.js';

const missing = chromiumMissing();
const REVOCATION_BOUND_MS = 1_000;
// The address checkRequest() sends from (test/support/envoy-client.ts), in the network added below.
const PARTNER_NETWORK = '203.0.113.0/24';

/**
 * An account manager onboards a partner in a real browser (Debian's chromium driven by playwright-core),
 * signed in through the provider's own login page; the key issued there works in a real Check over gRPC
 * until it is revoked there. A viewer sees no button that changes anything, and the API refuses them.
 */
describe('admin console in a browser', { skip: missing }, () => {
  let database: TestDatabase;
  let stack: ConsoleStack;
  let browser: Browser;
  let manager: BrowserContext;
  let page: Page;
  let client: ReturnType<typeof authorizationClient>;
  let key = '';
  // The organisation's issuer of partner tokens, with dynamic client registration.
  let tokenIssuer: TestIssuer;
  let partner = { clientId: '', clientSecret: '' };

  const keyCheck = async () => verdict(await check(client, { authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) }));

  before(async () => {
    database = await freshDatabase();
    // Another partner already there, so that the search has something to leave out.
    const added = await runCli(database.url, ['site', 'add', '1002', '--name', 'Bravo Bikes']);
    assert.equal(added.code, 0, added.stderr);
    tokenIssuer = await startTestIssuer({ clients: [], registration: true });
    stack = await startConsoleStack(database.url, {
      TOKEN_ISSUER: tokenIssuer.issuer,
      TOKEN_AUDIENCE: tokenIssuer.audience,
      TOKEN_JWKS_URL: tokenIssuer.jwksUrl,
      TOKEN_REGISTRATION_TOKEN: tokenIssuer.registration?.initialAccessToken ?? '',
    });
    client = authorizationClient(stack.service.grpcTarget);
    browser = await launchChromium();
    manager = await browser.newContext();
    page = await manager.newPage();
  });

  after(async () => {
    client?.close();
    await browser?.close();
    await stack?.close();
    await tokenIssuer?.close();
    await database?.drop();
  });

  it('signs the account manager in through the provider’s login page', async () => {
    await page.goto(`${stack.consoleBase}/`);
    assert.ok(page.url().startsWith(stack.issuer.issuer), `the provider's page, not ${page.url()}`);
    await signInWithBrowser(page, stack.consoleBase, ADMIN_PEOPLE.manager);
    await page.getByRole('heading', { name: 'Find a partner' }).waitFor();
    await page.getByText(ADMIN_PEOPLE.manager.email).waitFor();
  });

  it('creates the partner’s site', async () => {
    await page.getByText('New site').click();
    await page.getByLabel('Site id', { exact: true }).fill('1001');
    await page.getByLabel('Partner name', { exact: true }).fill('Acme Travel');
    await page.getByRole('button', { name: 'Create site' }).click();
    await page.getByRole('heading', { name: 'Acme Travel · site 1001' }).waitFor();
    const listed = await runCli(database.url, ['site', 'list']);
    assert.match(listed.stdout, /1001.*Acme Travel/);
  });

  it('finds the site by name and adds the partner’s network to its allowlist', async () => {
    await page.getByRole('link', { name: 'Find a partner' }).click();
    await page.getByLabel('Site id or partner name').fill('Acme');
    await page.getByRole('button', { name: 'Search' }).click();
    // Every site stays listed until the search's answer replaces the list: wait for that answer.
    await page.waitForURL(/\?query=Acme$/);
    await page.getByRole('link', { name: '1002' }).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: '1001' }).waitFor();
    assert.equal(await page.getByRole('link', { name: '1002' }).count(), 0, 'Bravo Bikes does not match Acme');
    await page.getByRole('link', { name: '1001' }).click();
    await page.getByRole('heading', { name: 'Acme Travel · site 1001' }).waitFor();
    await page.getByLabel('Add an address or network (CIDR)').fill(PARTNER_NETWORK);
    await page.getByRole('button', { name: 'Add address' }).click();
    await page.getByRole('cell', { name: PARTNER_NETWORK, exact: true }).waitFor();
    const listed = await runCli(database.url, ['ip', 'list', '1001']);
    assert.match(listed.stdout, /203\.0\.113\.0\/24/);
  });

  it('shows a bad address with the API’s message beside the input, announced', async () => {
    await page.getByLabel('Add an address or network (CIDR)').fill('not-an-address');
    await page.getByRole('button', { name: 'Add address' }).click();
    const alert = page.locator('#allowlist-add-error[role=alert]');
    await alert.waitFor();
    assert.match((await alert.textContent()) ?? '', /not-an-address/);
  });

  it('issues a key and shows it once, with the warning and a copy button; after a reload only the masked key remains', async () => {
    await manager.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.consoleBase });
    await page.getByLabel('Note').first().fill('Acme production');
    await page.getByRole('button', { name: 'Issue key' }).click();
    await page.getByText('This key will not be shown again.').waitFor();
    key = await page.getByLabel('The new key').inputValue();
    assert.ok(key.length >= 20, `a key, got ${key.length} characters`);
    await page.getByRole('button', { name: 'Copy key' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), key);

    await page.reload();
    await page.getByRole('heading', { name: 'Keys' }).waitFor();
    await page.getByRole('cell', { name: maskApiKey(key), exact: true }).waitFor();
    assert.equal(await page.getByLabel('The new key').count(), 0, 'the key field is gone');
    assert.ok(!(await page.content()).includes(key), 'the key is nowhere in the page');
  });

  it('labels every field and needs no sideways scrolling at 200 % zoom', async () => {
    const unlabelled = await page.evaluate(
      `[...document.querySelectorAll('input, select, textarea')].filter((field) => field.labels.length === 0 && !field.getAttribute('aria-label')).map((field) => field.outerHTML)`,
    );
    assert.deepEqual(unlabelled, []);
    const width = page.viewportSize()?.width ?? 1280;
    // 200 % zoom of a window this wide lays the page out as a window half as wide.
    await page.setViewportSize({ width: Math.round(width / 2), height: 720 });
    try {
      const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      const wide = await page.evaluate(
        `[...document.querySelectorAll('body *')].filter((element) => element.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !element.closest('.overflow-auto')).slice(0, 5).map((element) => element.outerHTML.slice(0, 120))`,
      );
      assert.equal(overflow, 0, `the page is wider than the window: ${JSON.stringify(wide)}`);
      await page.getByRole('button', { name: 'Issue key' }).focus();
      assert.equal(await page.evaluate('getComputedStyle(document.activeElement).outlineStyle'), 'solid', 'focus is visible');
    } finally {
      await page.setViewportSize({ width, height: 720 });
    }
  });

  it('the key issued in the browser is allowed in a real Check', async () => {
    await eventually('the new key to be allowed', keyCheck, (answer) => answer === 'allow', 10_000);
  });

  it('revoking it in the page refuses it within a second of the revoke’s response', async () => {
    await page.getByRole('button', { name: /^Revoke key / }).click();
    const revoked = page.waitForResponse((response) => response.request().method() === 'POST' && /\/keys\/[^/]+\/revoke$/.test(new URL(response.url()).pathname));
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key', exact: true }).click();
    assert.equal((await revoked).status(), 200);
    // eventually's bound starts now, at the revoke's response.
    await eventually('the revoked key to be refused', keyCheck, (answer) => answer !== 'allow', REVOCATION_BOUND_MS);
    await page.getByText(/revoked: it is refused from now on/).waitFor();
  });

  /** The hand-over shown in the page, by name. */
  const shownHandover = async (): Promise<Record<string, string>> =>
    Object.fromEntries(((await page.getByLabel('The hand-over').inputValue()).split('\n')).map((line) => [line.slice(0, line.indexOf(': ')), line.slice(line.indexOf(': ') + 2)]));
  const tokenCheck = async (token: string) => verdict(await check(client, { authorization: `Bearer ${token}` }));

  it('creates the partner’s token client at the issuer and shows the hand-over once with a copy button; its credentials get a token a real Check allows', async () => {
    await page.getByRole('button', { name: 'Create client' }).click();
    await page.getByText('The secret will not be shown again.').waitFor();
    const handover = await shownHandover();
    assert.deepEqual(Object.keys(handover), ['client_id', 'client_secret', 'token_endpoint', 'resource']);
    assert.deepEqual([handover['token_endpoint'], handover['resource']], [tokenIssuer.tokenEndpoint, tokenIssuer.audience]);
    await page.getByRole('button', { name: 'Copy hand-over' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), await page.getByLabel('The hand-over').inputValue());
    partner = { clientId: handover['client_id'] ?? '', clientSecret: handover['client_secret'] ?? '' };
    const token = await tokenIssuer.mintAccessToken(partner, { resource: handover['resource'] ?? '' });
    await eventually('the new client to be allowed', () => tokenCheck(token), (answer) => answer === 'allow', 10_000);

    await page.reload();
    await page.getByRole('cell', { name: partner.clientId, exact: true }).waitFor();
    assert.equal(await page.getByLabel('The hand-over').count(), 0, 'the hand-over is gone');
    assert.ok(!(await page.content()).includes(partner.clientSecret), 'the secret is nowhere in the page');
  });

  it('gives the client a new secret in the page (the old one is refused at the issuer), and removing it refuses its token within a second', async () => {
    await page.getByRole('button', { name: `New secret for ${partner.clientId}` }).click();
    await page.getByRole('button', { name: `Confirm new secret for ${partner.clientId}` }).click();
    await page.getByText('The secret will not be shown again.').waitFor();
    const rotated = await shownHandover();
    assert.equal(rotated['client_id'], partner.clientId);
    assert.notEqual(rotated['client_secret'], partner.clientSecret);
    await assert.rejects(tokenIssuer.mintAccessToken(partner), (error: TokenRequestRefused) => error.error === 'invalid_client');
    partner = { clientId: partner.clientId, clientSecret: rotated['client_secret'] ?? '' };
    const token = await tokenIssuer.mintAccessToken(partner);
    await eventually('the new secret’s token to be allowed', () => tokenCheck(token), (answer) => answer === 'allow', 10_000);
    await page.getByRole('button', { name: 'I have copied it: hide the hand-over' }).click();

    await page.getByRole('button', { name: `Remove token client ${partner.clientId}` }).click();
    const removed = page.waitForResponse((response) => response.request().method() === 'DELETE' && new URL(response.url()).pathname.startsWith('/api/v1/token-clients/'));
    await page.getByRole('dialog').getByRole('button', { name: 'Remove here and at the issuer' }).click();
    assert.equal((await removed).status(), 200);
    await eventually('the removed client’s token to be refused', () => tokenCheck(token), (answer) => answer === 107, REVOCATION_BOUND_MS);
    await page.getByText(/removed here and at the issuer: its tokens are refused from now on/).waitFor();
    assert.equal(await tokenIssuer.registration?.has(partner.clientId), false);
  });

  it('says in its own words that a client the issuer no longer knows may be gone there, and Remove here only removes it here', async () => {
    await page.getByRole('button', { name: 'Create client' }).click();
    await page.getByText('The secret will not be shown again.').waitFor();
    const clientId = (await shownHandover())['client_id'] ?? '';
    await page.getByRole('button', { name: 'I have copied it: hide the hand-over' }).click();
    // Deleted at the issuer while the removal's step here failed: what a retry in the page finds.
    const registration = tokenIssuer.registration;
    assert.ok(registration !== undefined);
    const deleted = await fetch(`${registration.endpoint}/${encodeURIComponent(clientId)}`, { method: 'DELETE', headers: { authorization: `Bearer ${registration.accessTokens.at(-1)}` } });
    assert.equal(deleted.status, 204);

    await page.getByRole('button', { name: `Remove token client ${clientId}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove here and at the issuer' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'may already be deleted at the issuer' });
    await alert.waitFor();
    assert.match(await alert.innerText(), /remove this one here only: Remove, then Remove here only, in client \S+'s row$/);
    assert.doesNotMatch(await alert.innerText(), /localOnly|local-only/);
    await page.getByRole('dialog').getByRole('button', { name: 'Remove here only' }).click();
    await page.getByText(/removed here only \(delete it at the issuer by hand if it is still there\): its tokens are refused from now on/).waitFor();
    await page.getByRole('cell', { name: clientId, exact: true }).waitFor({ state: 'detached' });
  });

  it('the audit trail page names the account manager for each change made in the browser (site, address, key issued and revoked, token client created, given a new secret and removed)', async () => {
    await page.getByRole('link', { name: 'Audit trail of this site' }).click();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    const actor = `${ADMIN_PEOPLE.manager.email} (sub ${ADMIN_PEOPLE.manager.subject})`;
    for (const action of ['site.add', 'ip.allow', 'key.issue', 'key.revoke', 'token-client.create', 'token-client.rotate-secret', 'token-client.remove']) {
      await page.getByRole('row').filter({ hasText: action }).filter({ hasText: actor }).first().waitFor();
    }
  });

  it('the migration board shows the partner’s site and warns that its request counts begin inside the 30 days it covers', async () => {
    // serve writes the counts of the checks above on its next flush; the board shows what is written.
    await eventually(
      'the board to show site 1001 with its warning',
      async () => {
        await page.goto(`${stack.consoleBase}/migration`);
        await page.getByText(/^(Migration from API keys to access tokens, per site|No site has traffic in this period\.)$/).waitFor();
        return { site: await page.getByRole('row', { name: /^1001 Acme Travel/ }).count(), warning: await page.getByRole('status').filter({ hasText: 'Warning: the oldest request counts held are from' }).count() };
      },
      (shown) => shown.site === 1 && shown.warning === 1,
      30_000,
    );
    const warning = (await page.getByRole('status').filter({ hasText: 'oldest request counts held' }).textContent()) ?? '';
    assert.match(warning, /token requests, key requests and the share on tokens count from then, not from \d{4}-\d\d-\d\dT/);
  });

  it('shows the viewer no button that changes anything, and the API refuses the viewer’s session 403', async () => {
    const viewer = await browser.newContext();
    try {
      const viewerPage = await viewer.newPage();
      await signInWithBrowser(viewerPage, stack.consoleBase, ADMIN_PEOPLE.viewer, '/sites/1001');
      await viewerPage.getByRole('heading', { name: 'Acme Travel · site 1001' }).waitFor();
      await viewerPage.getByRole('cell', { name: PARTNER_NETWORK, exact: true }).waitFor();
      for (const name of ['Issue key', 'Add address', 'Disable site', 'Add token client', 'Create client', 'Save grace']) {
        assert.equal(await viewerPage.getByRole('button', { name }).count(), 0, `no ${name} button for a viewer`);
      }
      const csrf = (await viewerPage.locator('meta[name="csrf-token"]').getAttribute('content')) ?? '';
      const direct = await viewer.request.post(`${stack.consoleBase}/api/v1/sites/1001/keys`, { headers: { 'x-csrf-token': csrf }, data: {} });
      assert.equal(direct.status(), 403);
    } finally {
      await viewer.close();
    }
  });

  it('signs out: the session cookie is gone and the console sends to the provider again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((url) => url.href.startsWith(stack.issuer.issuer));
    // oidc-provider asks before ending its own session; either answer comes back to the console.
    const confirm = page.getByRole('button', { name: /sign me out/i });
    if ((await confirm.count()) > 0) await confirm.click();
    await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
    const cookies = await manager.cookies(stack.consoleBase);
    assert.equal(cookies.find((cookie) => cookie.name === 'sitekey-console'), undefined);
    await page.goto(`${stack.consoleBase}/`);
    assert.ok(page.url().startsWith(stack.issuer.issuer), `the provider again, not ${page.url()}`);
  });
});
