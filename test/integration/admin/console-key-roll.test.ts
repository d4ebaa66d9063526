import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import pg from 'pg';
import { maskApiKey } from '../../../src/decision/api-key.js';
import { ADMIN_PEOPLE } from '../../support/admin-issuer.js';
import { chromiumMissing, launchChromium, signInWithBrowser } from '../../support/console-browser.js';
import { startConsoleStack, type ConsoleStack } from '../../support/console-stack.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { authorizationClient, check, verdict } from '../../support/envoy-client.js';
import { eventually } from '../../support/eventually.js';
import { runCli } from '../../support/service.js';

const missing = chromiumMissing();
const DAY_MS = 86_400_000;

/**
 * An account manager rolls a partner's key in a real browser: the new key is shown once with its copy
 * button and works in a real Check, and the old key keeps working until the date the form gave it.
 */
describe('rolling a key in the console', { skip: missing }, () => {
  let database: TestDatabase;
  let sql: pg.Client;
  let stack: ConsoleStack;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let client: ReturnType<typeof authorizationClient>;
  let oldKey = '';
  let oldKeyId = '';

  const keyCheck = async (key: string) => verdict(await check(client, { authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) }));

  before(async () => {
    database = await freshDatabase();
    for (const args of [['site', 'add', '1001', '--name', 'Acme Travel'], ['ip', 'allow', '1001', '203.0.113.0/24']]) {
      const result = await runCli(database.url, args);
      assert.equal(result.code, 0, result.stderr);
    }
    const issued = await runCli(database.url, ['key', 'issue', '1001', '--note', 'production', '--json']);
    assert.equal(issued.code, 0, issued.stderr);
    ({ apiKey: oldKey, keyId: oldKeyId } = JSON.parse(issued.stdout) as { apiKey: string; keyId: string });
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    stack = await startConsoleStack(database.url);
    client = authorizationClient(stack.service.grpcTarget);
    browser = await launchChromium();
    context = await browser.newContext();
    page = await context.newPage();
  });

  after(async () => {
    client?.close();
    await browser?.close();
    await stack?.close();
    await sql?.end();
    await database?.drop();
  });

  it('rolls the key: the new one shown once with its copy button and accepted by a Check, the old one until its date', async () => {
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.consoleBase });
    await signInWithBrowser(page, stack.consoleBase, ADMIN_PEOPLE.manager, '/sites/1001');
    await page.getByRole('heading', { name: 'Acme Travel · site 1001' }).waitFor();
    await page.getByRole('button', { name: `Roll key ${maskApiKey(oldKey)}` }).click();
    const ends = page.getByLabel('Old key works until (UTC date)');
    assert.equal(await ends.inputValue(), new Date(Date.now() + 7 * DAY_MS).toISOString().slice(0, 10), 'a week by default');
    const chosen = new Date(Date.now() + 3 * DAY_MS).toISOString().slice(0, 10);
    await ends.fill(chosen);
    await page.getByLabel('Note of the new key').fill('production, rolled');
    await page.getByRole('button', { name: 'Roll key', exact: true }).click();

    await page.getByText('This key will not be shown again.').waitFor();
    const newKey = await page.getByLabel('The new key').inputValue();
    assert.notEqual(newKey, oldKey);
    await page.getByText(`It replaces key ${oldKeyId}, which keeps working until ${chosen} 00:00 UTC`).waitFor();
    await page.getByRole('button', { name: 'Copy key' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), newKey);

    await eventually('the new key to be accepted by a Check', () => keyCheck(newKey), (answer) => answer === 'allow', 5_000);
    assert.equal(await keyCheck(oldKey), 'allow', 'the old key works until its date');
    const { rows } = await sql.query<{ expires_at: Date }>('SELECT expires_at FROM api_keys WHERE id = $1', [oldKeyId]);
    assert.equal(rows[0]?.expires_at.toISOString(), `${chosen}T00:00:00.000Z`);
    const audit = await sql.query<{ actor: string }>("SELECT actor FROM audit_log WHERE action = 'key.roll'");
    assert.match(audit.rows[0]?.actor ?? '', new RegExp(ADMIN_PEOPLE.manager.email.replace('.', '\\.')));

    await page.reload();
    await page.getByRole('cell', { name: maskApiKey(newKey), exact: true }).waitFor();
    assert.equal(await page.getByLabel('The new key').count(), 0, 'the key field is gone');
    assert.ok(!(await page.content()).includes(newKey), 'the key is nowhere in the page after a reload');
  });
});
