import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { ADMIN_PEOPLE } from '../../support/admin-issuer.js';
import { chromiumMissing, launchChromium, signInWithBrowser } from '../../support/console-browser.js';
import { startConsoleStack, type ConsoleStack } from '../../support/console-stack.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { authorizationClient, check, verdict } from '../../support/envoy-client.js';
import { eventually } from '../../support/eventually.js';
import { startTestIssuer, type TestIssuer } from '../../support/oidc-issuer.js';
import { runCli } from '../../support/service.js';

const missing = chromiumMissing();
const PARTNER_ADDRESS = '203.0.113.7';
const STRANGE_ADDRESS = '192.0.2.44';
const REVOKER = 'carol@example.com';
const ACME_APP = { clientId: 'acme-app', clientSecret: 'acme-app-secret-0123456789' };
const STRAY_APP = { clientId: 'stray-app', clientSecret: 'stray-app-secret-0123456789' };
// Written by serve each flush; a refusal is in the report at most this long after its check.
const FLUSH_BOUND_MS = 20_000;

/**
 * An account manager hears "we are blocked" from Acme, finds them by name, and reads for each refusal
 * why and what to do: an address not on the allowlist (103), a key revoked by a colleague (102), a
 * token that expired (106), and a client registered for no site (107); the audit link leads to the
 * entry that revoked the key. The refusals come from real Checks over gRPC and a real token issuer.
 */
describe('the blocked-partner page in a browser', { skip: missing }, () => {
  let database: TestDatabase;
  let stack: ConsoleStack;
  let tokenIssuer: TestIssuer;
  let browser: Browser;
  let page: Page;
  let client: ReturnType<typeof authorizationClient>;
  let key = '';
  let keyId = '';

  const cli = async (...args: string[]) => {
    const result = await runCli(database.url, args);
    assert.equal(result.code, 0, result.stderr);
    return result.stdout;
  };

  before(async () => {
    database = await freshDatabase();
    await cli('site', 'add', '1001', '--name', 'Acme Travel');
    await cli('site', 'add', '1002', '--name', 'Acme Bikes');
    await cli('ip', 'allow', '1001', '203.0.113.0/24');
    ({ apiKey: key, keyId } = JSON.parse(await cli('key', 'issue', '1001', '--json')) as { apiKey: string; keyId: string });
    await cli('key', 'revoke', '1001', keyId, '--actor', REVOKER);
    await cli('token-client', 'add', '1001', ACME_APP.clientId);
    tokenIssuer = await startTestIssuer({ clients: [ACME_APP, STRAY_APP], accessTokenTtlSeconds: 1 });
    stack = await startConsoleStack(database.url, {
      TOKEN_ISSUER: tokenIssuer.issuer,
      TOKEN_AUDIENCE: tokenIssuer.audience,
      TOKEN_JWKS_URL: tokenIssuer.jwksUrl,
      TOKEN_CLOCK_SKEW_SECONDS: '0',
      LAST_USED_FLUSH_SECONDS: '1',
    });
    client = authorizationClient(stack.service.grpcTarget);
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
    await signInWithBrowser(page, stack.consoleBase, ADMIN_PEOPLE.manager);
  });

  after(async () => {
    client?.close();
    await browser?.close();
    await stack?.close();
    await tokenIssuer?.close();
    await database?.drop();
  });

  it('refuses the partner in real Checks: an address not allowed, a revoked key, an expired token, an unregistered client', async () => {
    const keyed = { authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) };
    assert.equal(verdict(await check(client, { ...keyed, ip: STRANGE_ADDRESS })), 103);
    assert.equal(verdict(await check(client, { ...keyed, ip: PARTNER_ADDRESS })), 102);
    const token = await tokenIssuer.mintAccessToken(ACME_APP);
    // The token lives a second: checked until it has expired, as a partner that reuses it finds.
    await eventually('the token to expire', async () => verdict(await check(client, { authorization: `Bearer ${token}`, ip: PARTNER_ADDRESS })), (answer) => answer === 106, 10_000);
    const stray = await tokenIssuer.mintAccessToken(STRAY_APP);
    assert.equal(verdict(await check(client, { authorization: `Bearer ${stray}`, ip: PARTNER_ADDRESS })), 107);
  });

  /** The report's row of one refusal, once serve has written it and the page shows it. */
  const rowOf = async (code: RegExp) => {
    const row = page.getByRole('row').filter({ hasText: code });
    await eventually(
      `a row ${code}`,
      async () => {
        await page.reload();
        await page.getByRole('heading', { level: 2 }).waitFor();
        return row.count();
      },
      (count) => count > 0,
      FLUSH_BOUND_MS,
    );
    return row.first();
  };

  it('finds the partner by name among several matches, and says for each refusal why and what to do next', async () => {
    await page.getByRole('link', { name: 'Blocked partner' }).click();
    await page.getByLabel('Partner: name, site id or token client id').fill('Acme');
    await page.getByRole('button', { name: 'Find the partner' }).click();
    await page.getByText('2 partners match “Acme”: choose one.').waitFor();
    await page.getByRole('link', { name: '1001 Acme Travel' }).click();
    await page.getByRole('heading', { name: 'Site 1001 (Acme Travel)' }).waitFor();

    const address = await rowOf(/IP_NOT_WHITELISTED/);
    assert.match((await address.textContent()) ?? '', new RegExp(`address ${STRANGE_ADDRESS} is not on site 1001 \\(Acme Travel\\)'s allowlist \\(203\\.0\\.113\\.0/24\\)`));
    assert.match((await address.textContent()) ?? '', new RegExp(`Next step: if ${STRANGE_ADDRESS} is the partner's, add ${STRANGE_ADDRESS} \\(or its network\\)`));

    const revoked = await rowOf(/API_KEY_INVALID/);
    assert.match((await revoked.textContent()) ?? '', new RegExp(`key ${keyId} \\(\\*{5}${key.slice(-5)}\\) was revoked on \\d{1,2} \\w{3} \\d{4} \\d\\d:\\d\\d UTC by CLI user ${REVOKER}`));
    assert.match((await revoked.textContent()) ?? '', /Next step: if the partner still sends one of these keys, issue them a new key/);

    const expired = await rowOf(/ACCESS_TOKEN_INVALID/);
    assert.match((await expired.textContent()) ?? '', /client acme-app's access token was refused: the token has expired; request a new one/);
    assert.match((await expired.textContent()) ?? '', /Next step: the partner must request a new token before the old one expires/);
    assert.doesNotMatch((await expired.textContent()) ?? '', /unverified/, 'an expired token was signed by our issuer');
  });

  it('leads from the revoked key to the audit entry that revoked it', async () => {
    const revoked = await rowOf(/API_KEY_INVALID/);
    await revoked.getByRole('link', { name: 'The changes behind it in the audit trail' }).click();
    await page.waitForURL(/\/audit\?site=1001&action=key\.revoke$/);
    const entry = page.getByRole('row').filter({ hasText: new RegExp(`^CLI user ${REVOKER} revoked key ${keyId} \\(\\*{5}${key.slice(-5)}\\) of site 1001 \\(Acme Travel\\) \\(from active to revoked\\)`) });
    await entry.waitFor();
  });

  it('says of a client id that it is registered for no site, with its refused tokens', async () => {
    await page.getByRole('link', { name: 'Blocked partner' }).click();
    await page.getByLabel('Partner: name, site id or token client id').fill(STRAY_APP.clientId);
    await page.getByRole('button', { name: 'Find the partner' }).click();
    await page.getByRole('heading', { name: `Token client ${STRAY_APP.clientId}` }).waitFor();
    await page.getByText('Registered for no site.').waitFor();
    await page.getByText(`client ${STRAY_APP.clientId} is not registered for any site`).first().waitFor();
    const row = await rowOf(/TOKEN_CLIENT_UNKNOWN/);
    assert.match((await row.textContent()) ?? '', new RegExp(`register it for their site under Token clients`));
  });
});
