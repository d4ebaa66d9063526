import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { ADMIN_PEOPLE } from '../../support/admin-issuer.js';
import { chromiumMissing, launchChromium, signInWithBrowser } from '../../support/console-browser.js';
import { startConsoleStack, type ConsoleStack } from '../../support/console-stack.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { runCli } from '../../support/service.js';

const missing = chromiumMissing();
const DAY_MS = 86_400_000;
const ALICE = 'alice@example.com';
const BOB = 'bob@example.com';
// An entry written before entries recorded their before and after, long before the default 30 days.
const OLD_AT = new Date(Date.now() - 200 * DAY_MS);
const day = (at: Date): string => at.toISOString().slice(0, 10);
const MANY = 57;

/**
 * The audit trail read by an account manager in a real browser: changes made with the CLI and the API
 * read as sentences with their before and after, an old entry without them still reads as one, and
 * the filters by site, person and time, and Next, find what they say.
 */
describe('the audit trail page in a browser', { skip: missing }, () => {
  let database: TestDatabase;
  let stack: ConsoleStack;
  let browser: Browser;
  let page: Page;

  const cli = async (...args: string[]) => {
    const result = await runCli(database.url, args);
    assert.equal(result.code, 0, result.stderr);
  };

  before(async () => {
    database = await freshDatabase();
    await cli('site', 'add', '1001', '--name', 'Acme Travel', '--actor', ALICE);
    await cli('site', 'add', '1002', '--name', 'Bravo Bikes', '--actor', BOB);
    await cli('site', 'auth', '1001', 'tokens', '--actor', ALICE);
    await cli('site', 'disable', '1002', '--actor', BOB);
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    try {
      await sql.query(`INSERT INTO audit_log (at, actor, action, site_id, details) VALUES ($1, 'dave@example.com', 'site.disable', 1002, '{}')`, [OLD_AT]);
      await sql.query(
        `INSERT INTO audit_log (at, actor, action, site_id, details)
         SELECT now() - make_interval(mins => n), 'eve@example.com', 'ip.allow', 1001, jsonb_build_object('cidrs', jsonb_build_array('198.51.100.' || n || '/32'))
           FROM generate_series(1, $1::int) AS n`,
        [MANY],
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

  const sentences = async (): Promise<string[]> => {
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    await page.locator('table tbody tr, p:text("No change matches.")').first().waitFor();
    return page.locator('table tbody tr td:first-child').allTextContents();
  };
  const filter = async (fields: Readonly<Record<string, string>>) => {
    await page.goto(`${stack.consoleBase}/audit`);
    for (const [label, value] of Object.entries(fields)) await page.getByLabel(label).fill(value);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/\/audit\?/);
  };

  it('reads a change made through the API as a sentence with its before and after', async () => {
    await page.goto(`${stack.consoleBase}/audit`);
    const csrf = (await page.locator('meta[name="csrf-token"]').getAttribute('content')) ?? '';
    const answer = await page.request.post(`${stack.consoleBase}/api/v1/sites/1001/allowlist`, { headers: { 'x-csrf-token': csrf }, data: { entries: ['203.0.113.0/24'] } });
    assert.equal(answer.status(), 201, await answer.text());
    await filter({ 'Site id': '1001', 'Action (e.g. key, key.revoke)': 'ip.allow', 'Person (sub or verified e-mail, or part of it)': ADMIN_PEOPLE.manager.email });
    const [sentence] = await sentences();
    assert.match(sentence ?? '', new RegExp(`^${ADMIN_PEOPLE.manager.email} \\(sub [^)]+\\) added 203\\.0\\.113\\.0/24 to site 1001 \\(Acme Travel\\)'s allowlist \\(from 0 entries to 1 entry\\) — \\d{1,2} \\w{3} \\d{4} \\d\\d:\\d\\d UTC$`));
  });

  it('filters by site and by person, each change a sentence with before and after', async () => {
    await filter({ 'Site id': '1002' });
    const bravo = await sentences();
    assert.ok(bravo.length >= 2, JSON.stringify(bravo));
    assert.ok(bravo.every((sentence) => sentence.includes('site 1002 (Bravo Bikes)')), JSON.stringify(bravo));
    assert.match(bravo[0] ?? '', new RegExp(`^CLI user ${BOB} disabled site 1002 \\(Bravo Bikes\\) \\(from enabled to disabled\\) — `));

    await filter({ 'Person (sub or verified e-mail, or part of it)': 'alice@' });
    const alice = await sentences();
    assert.deepEqual(alice.map((sentence) => sentence.replace(/ — .*$/, '')), [
      `CLI user ${ALICE} switched site 1001 (Acme Travel) from API keys and tokens to tokens only`,
      `CLI user ${ALICE} added site 1001 (Acme Travel)`,
    ]);
  });

  it('filters by time, and an old entry without before and after reads as a sentence too', async () => {
    const from = new Date(OLD_AT.getTime() - DAY_MS);
    await filter({ 'From (date, UTC)': day(from), 'Until (date, UTC, included)': day(OLD_AT) });
    const old = await sentences();
    assert.equal(old.length, 1, JSON.stringify(old));
    assert.match(old[0] ?? '', /^"dave@example\.com" disabled site 1002 \(Bravo Bikes\) — \d{1,2} \w{3} \d{4} \d\d:\d\d UTC$/);
    await filter({ 'Until (date, UTC, included)': day(new Date(OLD_AT.getTime() - DAY_MS)) });
    assert.deepEqual(await sentences(), [], 'nothing before the oldest change');
  });

  it('refuses a time filter that is no date, or ends before it begins, naming the parameter', async () => {
    const refusals = [
      ['from=yesterday', 'from', 'DATE_INVALID'],
      ['from=2026-11-30&until=2026-11-29', 'until', 'UNTIL_NOT_AFTER_FROM'],
      ['until=2026-02-30', 'until', 'DATE_INVALID'],
    ] as const;
    for (const [query, field, code] of refusals) {
      const answer = await page.request.get(`${stack.consoleBase}/api/v1/audit?${query}`);
      assert.equal(answer.status(), 400, query);
      const { error } = (await answer.json()) as { error: { code: string; field: string; message: string } };
      assert.deepEqual({ code: error.code, field: error.field }, { code, field }, query);
      assert.doesNotMatch(error.message, /--|sitekey-authz/, query);
    }
  });

  it('pages with Next through more changes than a page holds, each once', async () => {
    await filter({ 'Person (sub or verified e-mail, or part of it)': 'eve@example.com' });
    const first = await sentences();
    assert.equal(first.length, 50);
    await page.getByRole('button', { name: 'Next' }).click();
    await page.waitForURL(/cursor=/);
    await page.getByText('(a later page)').waitFor();
    const second = await sentences();
    assert.equal(second.length, MANY - 50);
    assert.equal(await page.getByRole('button', { name: 'Next' }).count(), 0, 'no page after the last');
    const shown = [...first, ...second];
    assert.equal(new Set(shown).size, MANY, 'every change once');
    assert.ok(shown.every((sentence) => /^"eve@example\.com" added 198\.51\.100\.\d+\/32 to site 1001 \(Acme Travel\)'s allowlist — /.test(sentence)));
  });
});
