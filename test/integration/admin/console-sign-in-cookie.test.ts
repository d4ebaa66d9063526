import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ADMIN_PEOPLE } from '../../support/admin-issuer.js';
import { startConsoleStack, type ConsoleStack } from '../../support/console-stack.js';
import { CookieJar, PAGE_HEADERS, redirectOf, signInAtProvider, signInToConsole } from '../../support/console-session.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

const SESSION_COOKIE = 'sitekey-console';
const SIGN_IN_PREFIX = 'sitekey-console-sign-in-';
const PAGE_LOADS = 1_000;
const AT_ONCE = 8;

/** The rows of every table of the schema, by table. */
async function rowCounts(databaseUrl: string): Promise<Record<string, number>> {
  const sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  try {
    const { rows: tables } = await sql.query<{ name: string }>(
      "SELECT quote_ident(table_name) AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1",
    );
    const counts: Record<string, number> = {};
    for (const { name } of tables) {
      const { rows } = await sql.query<{ n: string }>(`SELECT count(*) AS n FROM ${name}`);
      counts[name] = Number(rows[0]?.n);
    }
    return counts;
  } finally {
    await sql.end();
  }
}

function signInCookieLines(answer: Response): string[] {
  return answer.headers.getSetCookie().filter((line) => line.startsWith(SIGN_IN_PREFIX));
}

/** A sign-in in progress lives in the browser's cookie only; the database hears of a person once they have signed in. */
describe('admin console: sign-in state in a sealed cookie, and sign-out', () => {
  let database: TestDatabase;
  let stack: ConsoleStack;

  before(async () => {
    database = await freshDatabase();
    stack = await startConsoleStack(database.url);
  });

  after(async () => {
    await stack?.close();
    await database?.drop();
  });

  it(`writes no row to any table for ${PAGE_LOADS} page loads by someone not signed in`, async () => {
    const before = await rowCounts(database.url);
    let redirected = 0;
    let withSignInCookie = 0;
    for (let started = 0; started < PAGE_LOADS; started += AT_ONCE) {
      const answers = await Promise.all(
        Array.from({ length: AT_ONCE }, () => fetch(`${stack.consoleBase}/sites/1001`, { headers: PAGE_HEADERS, redirect: 'manual' })),
      );
      for (const answer of answers) {
        await answer.arrayBuffer();
        if (answer.status === 302) redirected += 1;
        if (signInCookieLines(answer).length === 1) withSignInCookie += 1;
      }
    }
    assert.equal(redirected, PAGE_LOADS, 'each load is sent to the provider');
    assert.deepEqual(await rowCounts(database.url), before);
    assert.equal(withSignInCookie, PAGE_LOADS, 'each with its own sign-in cookie');
  });

  it('signs in from several tabs of one browser started before any came back, and only then writes a session', async () => {
    const jar = new CookieJar();
    const first = await jar.fetch(`${stack.consoleBase}/sites/1001`, { headers: PAGE_HEADERS });
    const second = await jar.fetch(`${stack.consoleBase}/audit`, { headers: PAGE_HEADERS });
    const sessionsBefore = (await rowCounts(database.url))['admin_console_sessions'];
    for (const [start, path] of [[first, '/sites/1001'], [second, '/audit']] as const) {
      // The provider's side in a jar of its own: its session from the first tab would skip its login page.
      const callback = await signInAtProvider(new CookieJar(), redirectOf(start, 'page'), ADMIN_PEOPLE.manager);
      const back = await jar.fetch(callback, { headers: PAGE_HEADERS });
      assert.equal(back.status, 302, await back.text());
      assert.equal(back.headers.get('location'), path, 'back to the page this tab asked for');
      assert.match(signInCookieLines(back)[0] ?? '', /Max-Age=0/, "this tab's sign-in cookie is cleared");
    }
    assert.equal((await rowCounts(database.url))['admin_console_sessions'], (sessionsBefore ?? 0) + 1, 'one session row: the second sign-in replaced the first');
    assert.equal((await jar.fetch(`${stack.consoleBase}/api/v1/me`)).status, 200);
  });

  it('keeps at most four sign-ins in progress per browser, ending the oldest', async () => {
    const jar = new CookieJar();
    const states: string[] = [];
    for (let tab = 0; tab < 6; tab += 1) {
      const start = await jar.fetch(`${stack.consoleBase}/`, { headers: PAGE_HEADERS });
      states.push(redirectOf(start, 'page').searchParams.get('state') ?? '');
    }
    const held = states.filter((state) => jar.get(stack.consoleBase, `${SIGN_IN_PREFIX}${state}`) !== undefined);
    assert.deepEqual(held, states.slice(2), 'the four newest');
  });

  it('refuses a changed sign-in cookie with a page that says to sign in again, and writes no session', async () => {
    const jar = new CookieJar();
    const start = await jar.fetch(`${stack.consoleBase}/`, { headers: PAGE_HEADERS });
    const state = redirectOf(start, 'page').searchParams.get('state') ?? '';
    const name = `${SIGN_IN_PREFIX}${state}`;
    const sealed = jar.get(stack.consoleBase, name) ?? '';
    const flipped = sealed.slice(0, 40) + (sealed[40] === 'A' ? 'B' : 'A') + sealed.slice(41);
    jar.set(stack.consoleBase, name, flipped);
    const sessionsBefore = (await rowCounts(database.url))['admin_console_sessions'];
    const callback = await signInAtProvider(jar, redirectOf(start, 'page'), ADMIN_PEOPLE.manager);
    const back = await jar.fetch(callback, { headers: PAGE_HEADERS });
    assert.equal(back.status, 400);
    assert.match(await back.text(), /could not be read[^<]*Sign in again/);
    assert.equal(jar.get(stack.consoleBase, SESSION_COOKIE), undefined, 'no session cookie');
    assert.equal((await rowCounts(database.url))['admin_console_sessions'], sessionsBefore, 'no session row');
  });

  it("refuses another tab's sign-in cookie moved under this callback's state", async () => {
    const jar = new CookieJar();
    const mine = await jar.fetch(`${stack.consoleBase}/`, { headers: PAGE_HEADERS });
    const other = await jar.fetch(`${stack.consoleBase}/audit`, { headers: PAGE_HEADERS });
    const myState = redirectOf(mine, 'page').searchParams.get('state') ?? '';
    const otherState = redirectOf(other, 'page').searchParams.get('state') ?? '';
    jar.set(stack.consoleBase, `${SIGN_IN_PREFIX}${myState}`, jar.get(stack.consoleBase, `${SIGN_IN_PREFIX}${otherState}`) ?? '');
    const callback = await signInAtProvider(jar, redirectOf(mine, 'page'), ADMIN_PEOPLE.manager);
    const back = await jar.fetch(callback, { headers: PAGE_HEADERS });
    assert.equal(back.status, 400);
    assert.equal(jar.get(stack.consoleBase, SESSION_COOKIE), undefined);
  });

  /** Signing out ends a session only when the console's own page asks. */
  describe('sign-out from another site', () => {
    const CROSS_SITE_FORM = {
      method: 'POST',
      headers: { origin: 'https://attacker.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'content-type': 'application/x-www-form-urlencoded' },
      body: 'x=1',
    };

    it("answers a cross-site form post without the browser's (SameSite=Lax) cookie with 403 and no Set-Cookie", async () => {
      const answer = await fetch(`${stack.consoleBase}/auth/sign-out`, { ...CROSS_SITE_FORM, redirect: 'manual' });
      assert.equal(answer.status, 403);
      assert.deepEqual(answer.headers.getSetCookie(), []);
    });

    it('refuses a cross-site post that carries the session cookie, and the session goes on', async () => {
      const jar = new CookieJar();
      await signInToConsole(jar, stack.consoleBase, ADMIN_PEOPLE.manager);
      const answer = await jar.fetch(`${stack.consoleBase}/auth/sign-out`, CROSS_SITE_FORM);
      assert.equal(answer.status, 403);
      assert.deepEqual(answer.headers.getSetCookie(), []);
      assert.equal((await jar.fetch(`${stack.consoleBase}/api/v1/me`)).status, 200, 'still signed in');
    });

    it('sets no cookie when a request from the console itself has no session to end', async () => {
      const answer = await fetch(`${stack.consoleBase}/auth/sign-out`, { method: 'POST', headers: { origin: stack.consoleBase, 'sec-fetch-site': 'same-origin' } });
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.headers.getSetCookie(), []);
    });
  });
});
