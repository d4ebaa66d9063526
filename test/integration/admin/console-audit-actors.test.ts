import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { adminApi } from '../../support/admin-api.js';
import { ADMIN_PEOPLE, type AdminPerson } from '../../support/admin-issuer.js';
import { chromiumMissing, launchChromium, signInWithBrowser } from '../../support/console-browser.js';
import { startConsoleStack, type ConsoleStack } from '../../support/console-stack.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { runCli } from '../../support/service.js';

const missing = chromiumMissing();
/** Someone the provider lets write any e-mail, and does not verify it: they dress it up as the admin. */
const MALLORY: AdminPerson = {
  email: 'admin@example.test (sub a-1003)',
  password: 'mallory-password',
  subject: 'mallory-6',
  name: 'Mallory',
  roles: ['account-manager'],
  emailVerified: false,
};
const MANAGER = ADMIN_PEOPLE.manager;

interface ApiAuditEntry {
  readonly actor: string;
  readonly actorKind: string | null;
  readonly actorSubject: string | null;
  readonly actorEmail: string | null;
  readonly action: string;
  readonly details: { readonly cidrs?: readonly string[] };
  readonly summary: string;
}

/**
 * Who acted, as the audit trail records and shows it: an admin token's sub and its verified e-mail
 * apart, an unverified e-mail nowhere, the CLI's name as the CLI's, and an entry from before the
 * parts as its one text; through a real provider, the API, the CLI and the console in a browser.
 */
describe('audit actors that cannot be dressed up', { skip: missing }, () => {
  let database: TestDatabase;
  let stack: ConsoleStack;
  let browser: Browser;
  let page: Page;
  let sql: pg.Client;
  let viewerToken: string;

  before(async () => {
    database = await freshDatabase();
    const added = await runCli(database.url, ['site', 'add', '1001', '--name', 'Acme Travel', '--actor', 'alice@example.com']);
    assert.equal(added.code, 0, added.stderr);
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    // As entries were written before subjects and e-mails were kept apart: one text.
    await sql.query(`INSERT INTO audit_log (actor, action, site_id, details) VALUES ('dave@example.com (sub 248289761009)', 'site.enable', 1001, '{}')`);
    stack = await startConsoleStack(database.url, {}, [MALLORY]);
    const adminBase = stack.consoleBase;
    await adminApi(adminBase, await stack.issuer.tokenFor(MALLORY)).ok('POST', '/api/v1/sites/1001/allowlist', { entries: ['198.51.100.6/32'] }, 201);
    await adminApi(adminBase, await stack.issuer.tokenFor('manager')).ok('POST', '/api/v1/sites/1001/allowlist', { entries: ['198.51.100.2/32'] }, 201);
    viewerToken = await stack.issuer.tokenFor('viewer');
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
    await signInWithBrowser(page, stack.consoleBase, MANAGER);
  });

  after(async () => {
    await sql?.end();
    await browser?.close();
    await stack?.close();
    await database?.drop();
  });

  const audit = async (query = ''): Promise<ApiAuditEntry[]> => {
    const answer = await adminApi(stack.consoleBase, viewerToken).ok('GET', `/api/v1/audit${query}`);
    return answer.items as ApiAuditEntry[];
  };
  const byCidr = (entries: readonly ApiAuditEntry[], cidr: string) => entries.find((entry) => entry.details.cidrs?.includes(cidr));

  it('records the dressed-up token as its sub alone, with no e-mail, in the table and in the API', async () => {
    const { rows } = await sql.query("SELECT actor, actor_kind, actor_subject, actor_email FROM audit_log WHERE details->'cidrs' ? '198.51.100.6/32'");
    assert.deepEqual(rows, [{ actor: 'sub mallory-6', actor_kind: 'admin-token', actor_subject: 'mallory-6', actor_email: null }]);
    const entries = await audit();
    const mallory = byCidr(entries, '198.51.100.6/32');
    assert.ok(mallory);
    assert.deepEqual(
      { actor: mallory.actor, actorKind: mallory.actorKind, actorSubject: mallory.actorSubject, actorEmail: mallory.actorEmail },
      { actor: 'sub mallory-6', actorKind: 'admin-token', actorSubject: 'mallory-6', actorEmail: null },
    );
    assert.match(mallory.summary, /^sub mallory-6 added 198\.51\.100\.6\/32 to site 1001 \(Acme Travel\)'s allowlist/);
    assert.doesNotMatch(JSON.stringify(entries), /a-1003/, 'the unverified e-mail is nowhere');
  });

  it('keeps a verified e-mail apart from the sub, names the CLI as the CLI, and shows an older entry as it was recorded', async () => {
    const entries = await audit();
    const manager = byCidr(entries, '198.51.100.2/32');
    assert.deepEqual(
      { actorKind: manager?.actorKind, actorSubject: manager?.actorSubject, actorEmail: manager?.actorEmail, actor: manager?.actor },
      { actorKind: 'admin-token', actorSubject: MANAGER.subject, actorEmail: MANAGER.email, actor: `${MANAGER.email} (sub ${MANAGER.subject})` },
    );
    const cli = entries.find((entry) => entry.action === 'site.add');
    assert.deepEqual({ actorKind: cli?.actorKind, actorSubject: cli?.actorSubject, actorEmail: cli?.actorEmail }, { actorKind: 'cli', actorSubject: 'alice@example.com', actorEmail: null });
    assert.match(cli?.summary ?? '', /^CLI user alice@example\.com added site 1001 \(Acme Travel\) — /);
    const old = entries.find((entry) => entry.action === 'site.enable');
    assert.deepEqual({ actorKind: old?.actorKind, actorSubject: old?.actorSubject, actorEmail: old?.actorEmail }, { actorKind: null, actorSubject: null, actorEmail: null });
    assert.match(old?.summary ?? '', /^"dave@example\.com \(sub 248289761009\)" enabled site 1001 \(Acme Travel\) — /);
  });

  it('filters by person on the sub or the verified e-mail: the admin\'s address finds nothing of the dressed-up token, wildcards are literal', async () => {
    assert.deepEqual((await audit(`?actor=${encodeURIComponent('admin@example.test')}`)).map((entry) => entry.actor), []);
    assert.deepEqual((await audit('?actor=a-1003')).map((entry) => entry.actor), []);
    assert.deepEqual((await audit('?actor=mallory-6')).map((entry) => entry.actor), ['sub mallory-6']);
    assert.deepEqual((await audit(`?actor=${encodeURIComponent(MANAGER.email)}`)).map((entry) => entry.actorSubject), [MANAGER.subject]);
    assert.deepEqual((await audit(`?actor=${encodeURIComponent('%')}`)).map((entry) => entry.actor), [], 'a % matches only a %');
    assert.deepEqual((await audit('?actor=dave@')).map((entry) => entry.action), ['site.enable'], 'an older entry by its text');
  });

  it('the console shows who acted with the sub and the verified e-mail apart, and never the unverified one', async () => {
    await page.goto(`${stack.consoleBase}/audit`);
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    const row = (text: string) => page.getByRole('row').filter({ hasText: text });
    await row('198.51.100.6/32').waitFor();
    const who = async (text: string) => (await row(text).locator('td.actor').innerText()).replace(/\s+/g, ' ').trim();
    assert.equal(await who('198.51.100.6/32'), 'sub mallory-6 no verified e-mail');
    assert.match(await row('198.51.100.6/32').locator('td').first().innerText(), /^sub mallory-6 added 198\.51\.100\.6\/32/);
    assert.equal(await who('198.51.100.2/32'), `sub ${MANAGER.subject} ${MANAGER.email}`);
    assert.equal(await who('added site 1001'), 'CLI user alice@example.com');
    assert.equal(await who('enabled site 1001'), '"dave@example.com (sub 248289761009)" (as recorded, not verified)');
    assert.doesNotMatch(await page.locator('main').innerText(), /a-1003/);
  });

  it('audit list prints who acted in columns of their own, not raw JSON', async () => {
    const listed = await runCli(database.url, ['audit', 'list']);
    assert.equal(listed.code, 0, listed.stderr);
    const lines = listed.stdout.trimEnd().split('\n');
    assert.match(lines[0] ?? '', /^AT +BY +SUBJECT +VERIFIED E-MAIL +ACTION +SITE +WHAT$/);
    const line = (cidr: string) => lines.find((text) => text.includes(cidr)) ?? '';
    assert.match(line('198.51.100.6/32'), / admin port +mallory-6 +- +ip\.allow +1001 +added 198\.51\.100\.6\/32 to site 1001 \(Acme Travel\)'s allowlist/);
    assert.match(line('198.51.100.2/32'), new RegExp(` admin port +${MANAGER.subject} +${MANAGER.email.replace('.', '\\.')} +ip\\.allow +1001 `));
    assert.match(lines.find((text) => text.includes('site.add')) ?? '', / CLI +alice@example\.com +- +site\.add +1001 +added site 1001 \(Acme Travel\)$/);
    assert.match(lines.find((text) => text.includes('site.enable')) ?? '', / as recorded +"dave@example\.com \(sub 248289761009\)" +- +site\.enable +1001 +enabled site 1001/);
    assert.doesNotMatch(listed.stdout, /a-1003|\{"/);
  });
});
