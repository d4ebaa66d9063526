import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ADMIN_PEOPLE } from '../../support/admin-issuer.js';
import { chromiumMissing, launchChromium, signInWithBrowser } from '../../support/console-browser.js';
import { startConsoleStack, type ConsoleStack } from '../../support/console-stack.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

const missing = chromiumMissing();

/** A page on another site (localhost is not the same site as 127.0.0.1) that posts a form to the console's sign-out at once. */
function startAttackerSite(target: string): Promise<Server> {
  const page = `<!doctype html><form method="post" action="${target}/auth/sign-out"><input name="x" value="1"></form><script>document.forms[0].submit()</script>`;
  const server = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end(page));
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** Sign-in from several tabs at once, and sign-out, in Debian's chromium. */
describe('admin console sign-in and sign-out in a browser', { skip: missing }, () => {
  let database: TestDatabase;
  let stack: ConsoleStack;
  let browser: Browser;
  let context: BrowserContext;
  let attacker: Server;

  before(async () => {
    database = await freshDatabase();
    stack = await startConsoleStack(database.url);
    browser = await launchChromium();
    context = await browser.newContext();
    attacker = await startAttackerSite(stack.consoleBase);
  });

  after(async () => {
    attacker?.close();
    await browser?.close();
    await stack?.close();
    await database?.drop();
  });

  it('signs in from two tabs opened before either signed in, each back on the page it asked for', async () => {
    const first = await context.newPage();
    const second = await context.newPage();
    await Promise.all([first.goto(`${stack.consoleBase}/audit`), second.goto(`${stack.consoleBase}/`)]);
    const tabs: Array<[Page, string]> = [[first, '/audit'], [second, '/']];
    for (const [tab, path] of tabs) {
      assert.ok(tab.url().startsWith(stack.issuer.issuer), `the provider's page, not ${tab.url()}`);
      await tab.getByLabel('E-mail').fill(ADMIN_PEOPLE.manager.email);
      await tab.getByLabel('Password').fill(ADMIN_PEOPLE.manager.password);
      await tab.getByRole('button', { name: 'Sign in' }).click();
      await tab.waitForURL((url) => url.href.startsWith(stack.consoleBase));
      assert.equal(new URL(tab.url()).pathname, path, await tab.locator('main').innerText());
      await tab.getByRole('button', { name: 'Sign out' }).waitFor();
    }
    await Promise.all([first.close(), second.close()]);
  });

  it("keeps the session when another site's page posts a form to /auth/sign-out, and the console's own button still signs out", async () => {
    // A browser of its own: the tabs above left a session at the provider, which skips its login page.
    const own = await browser.newContext();
    const page = await own.newPage();
    await signInWithBrowser(page, stack.consoleBase, ADMIN_PEOPLE.manager);
    const signedIn = async () => (await own.request.get(`${stack.consoleBase}/api/v1/me`)).status();
    assert.equal(await signedIn(), 200);
    const posted = page.waitForResponse((answer) => answer.url() === `${stack.consoleBase}/auth/sign-out`);
    await page.goto(`http://localhost:${(attacker.address() as AddressInfo).port}/`);
    const answer = await posted;
    assert.equal(answer.status(), 403);
    assert.ok((await own.cookies(stack.consoleBase)).some((cookie) => cookie.name === 'sitekey-console'), 'the session cookie is kept');
    assert.equal(await signedIn(), 200, 'still signed in');

    await page.goto(`${stack.consoleBase}/`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((url) => url.href.startsWith(stack.issuer.issuer));
    const confirm = page.getByRole('button', { name: /sign me out/i });
    if ((await confirm.count()) > 0) await confirm.click();
    await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
    assert.equal((await own.cookies(stack.consoleBase)).find((cookie) => cookie.name === 'sitekey-console'), undefined);
    assert.equal(await signedIn(), 401);
  });
});
