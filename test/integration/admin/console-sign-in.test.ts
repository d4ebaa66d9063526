import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { CONTENT_SECURITY_POLICY } from '../../../src/admin/console/console-handler.js';
import { ADMIN_PEOPLE } from '../../support/admin-issuer.js';
import { startConsoleStack, type ConsoleStack } from '../../support/console-stack.js';
import { CookieJar, PAGE_HEADERS, redirectOf, signInAtProvider, signInToConsole } from '../../support/console-session.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { freePort } from '../../../src/embedded/embedded-postgres.js';
import { eventually } from '../../support/eventually.js';
import { runCli, startService, type RunningService } from '../../support/service.js';

const SESSION_COOKIE = 'sitekey-console';
const SIGN_IN_PREFIX = 'sitekey-console-sign-in-';

function setCookieLine(answer: Response, name: string): string {
  const line = answer.headers.getSetCookie().find((cookie) => cookie.startsWith(`${name}=`));
  assert.ok(line, `a Set-Cookie for ${name} (got ${JSON.stringify(answer.headers.getSetCookie())})`);
  return line;
}

function assertSecurityHeaders(answer: Response, what: string): void {
  assert.equal(answer.headers.get('content-security-policy'), CONTENT_SECURITY_POLICY, what);
  assert.equal(answer.headers.get('x-frame-options'), 'DENY', what);
  assert.equal(answer.headers.get('referrer-policy'), 'no-referrer', what);
}

/** The console's sign-in, session and CSRF over HTTP, against the real service and a real provider, no browser. */
describe('admin console: sign-in, session cookie, CSRF', () => {
  let database: TestDatabase;
  let stack: ConsoleStack;

  before(async () => {
    database = await freshDatabase();
    const added = await runCli(database.url, ['site', 'add', '1001', '--name', 'Acme Travel']);
    assert.equal(added.code, 0, added.stderr);
    stack = await startConsoleStack(database.url);
  });

  after(async () => {
    await stack?.close();
    await database?.drop();
  });

  it('sends an unauthenticated page visit to the provider: code with PKCE S256, state, nonce, the console redirect URI', async () => {
    const jar = new CookieJar();
    const answer = await jar.fetch(`${stack.consoleBase}/sites/1001`, { headers: PAGE_HEADERS });
    assert.equal(answer.status, 302);
    const location = redirectOf(answer, 'page');
    assert.equal(`${location.origin}${location.pathname}`, stack.issuer.authorizationEndpoint);
    const params = location.searchParams;
    assert.equal(params.get('response_type'), 'code');
    assert.equal(params.get('client_id'), stack.issuer.clientId);
    assert.equal(params.get('redirect_uri'), `${stack.consoleBase}/auth/callback`);
    assert.equal(params.get('code_challenge_method'), 'S256');
    assert.match(params.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.match(params.get('state') ?? '', /^[A-Za-z0-9_-]{20,}$/);
    assert.match(params.get('nonce') ?? '', /^[A-Za-z0-9_-]{20,}$/);
    assert.equal(params.get('resource'), stack.issuer.audience);
    assert.match(params.get('scope') ?? '', /\bopenid\b/);
    const cookie = setCookieLine(answer, `${SIGN_IN_PREFIX}${params.get('state')}`);
    assert.match(cookie, /; HttpOnly/);
    assert.match(cookie, /; SameSite=Lax/);
    assert.match(cookie, /; Path=\//);
    assert.match(cookie, /; Max-Age=600/);
    assert.doesNotMatch(cookie, /Secure/, 'http on loopback: no Secure attribute');
    assertSecurityHeaders(answer, 'the redirect');
  });

  it('does not start a sign-in for a background request, and answers 401', async () => {
    const answer = await fetch(`${stack.consoleBase}/favicon.ico`, { headers: { accept: 'image/*', 'sec-fetch-dest': 'image' }, redirect: 'manual' });
    assert.equal(answer.status, 401);
    assert.equal(answer.headers.getSetCookie().length, 0);
  });

  it('signs in through the provider: a session cookie with its attributes, the page with the strict CSP, the session id stored hashed', async () => {
    const jar = new CookieJar();
    const start = await jar.fetch(`${stack.consoleBase}/sites/1001?tab=keys`, { headers: PAGE_HEADERS });
    const state = redirectOf(start, 'page').searchParams.get('state');
    const callback = await signInAtProvider(jar, redirectOf(start, 'page'), ADMIN_PEOPLE.manager);
    assert.equal(`${callback.origin}${callback.pathname}`, `${stack.consoleBase}/auth/callback`);
    const back = await jar.fetch(callback, { headers: PAGE_HEADERS });
    assert.equal(back.status, 302);
    assert.equal(back.headers.get('location'), '/sites/1001?tab=keys', 'back to the page first asked for');
    const cookie = setCookieLine(back, SESSION_COOKIE);
    assert.match(cookie, /; HttpOnly/);
    assert.match(cookie, /; SameSite=Lax/);
    assert.match(cookie, /; Path=\//);
    assert.match(cookie, /; Max-Age=28800/);
    assert.doesNotMatch(cookie, /Secure/);
    assert.match(setCookieLine(back, `${SIGN_IN_PREFIX}${state}`), /Max-Age=0/, 'the sign-in cookie is cleared');

    const page = await jar.fetch(`${stack.consoleBase}/sites/1001`, { headers: PAGE_HEADERS });
    assert.equal(page.status, 200);
    assertSecurityHeaders(page, 'the page');
    const html = await page.text();
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    assert.doesNotMatch(html, /\sstyle=|<style/, 'no inline style');
    assertSecurityHeaders(await fetch(`${stack.consoleBase}/console/app.js`), 'a script');

    const me = await jar.fetch(`${stack.consoleBase}/api/v1/me`);
    assert.equal(me.status, 200);
    const body = (await me.json()) as { email?: string; roles?: string[] };
    assert.equal(body.email, ADMIN_PEOPLE.manager.email);
    assert.deepEqual(body.roles, ['account-manager']);

    const id = jar.get(stack.consoleBase, SESSION_COOKIE) ?? '';
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    try {
      const { rows } = await sql.query<{ subject: string; id: Buffer }>('SELECT subject, id_sha256 AS id FROM admin_console_sessions');
      const mine = rows.filter((row) => row.id.equals(createHash('sha256').update(id).digest()));
      assert.equal(mine.length, 1, 'the session is found by the SHA-256 of its cookie');
      assert.equal(mine[0]?.subject, ADMIN_PEOPLE.manager.subject);
      const { rows: dump } = await sql.query<{ row: string }>('SELECT t::text AS row FROM admin_console_sessions t');
      assert.ok(dump.every((row) => !row.row.includes(id)), 'the cookie value itself is stored nowhere');
      // A JWT is base64url of '{"…' and two more parts, joined by dots; a sealed value is standard base64,
      // which has no dot, so only a token in clear can match (a bare 'eyJ' can turn up in sealed bytes).
      const jwt = /eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/;
      assert.ok(dump.length > 0 && dump.every((row) => !jwt.test(row.row)), 'a token is stored in clear');
    } finally {
      await sql.end();
    }
  });

  it('refuses a callback whose state does not match the sign-in this browser started', async () => {
    const jar = new CookieJar();
    const start = await jar.fetch(`${stack.consoleBase}/`, { headers: PAGE_HEADERS });
    const callback = await signInAtProvider(jar, redirectOf(start, 'page'), ADMIN_PEOPLE.manager);
    callback.searchParams.set('state', 'a-state-this-browser-never-sent');
    const back = await jar.fetch(callback, { headers: PAGE_HEADERS });
    assert.equal(back.status, 400);
    assert.match(await back.text(), /No sign-in was in progress in this browser for this answer[^<]*Sign in again/);
    assert.equal(jar.get(stack.consoleBase, SESSION_COOKIE), undefined, 'no session');
    assertSecurityHeaders(back, 'the refusal');
  });

  it('refuses a callback without the sign-in cookie (another browser, or a replay)', async () => {
    const jar = new CookieJar();
    const start = await jar.fetch(`${stack.consoleBase}/`, { headers: PAGE_HEADERS });
    const callback = await signInAtProvider(jar, redirectOf(start, 'page'), ADMIN_PEOPLE.manager);
    const stranger = await fetch(callback, { redirect: 'manual' });
    assert.equal(stranger.status, 400);
    assert.equal(stranger.headers.getSetCookie().some((line) => line.startsWith(`${SESSION_COOKIE}=`)), false);
  });

  it('lets the pages read with the cookie, and refuses a change without the CSRF token or with a wrong one (403)', async () => {
    const jar = new CookieJar();
    const csrf = await signInToConsole(jar, stack.consoleBase, ADMIN_PEOPLE.manager);
    const allow = (headers: Record<string, string>) =>
      jar.fetch(`${stack.consoleBase}/api/v1/sites/1001/allowlist`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ entries: ['198.51.100.0/24'] }),
      });
    const missing = await allow({});
    assert.equal(missing.status, 403);
    assert.match(await missing.text(), /CSRF/i);
    const wrong = await allow({ 'x-csrf-token': `${csrf.slice(0, -1)}${csrf.endsWith('A') ? 'B' : 'A'}` });
    assert.equal(wrong.status, 403);
    const right = await allow({ 'x-csrf-token': csrf });
    assert.equal(right.status, 201, await right.text());
    const list = await runCli(database.url, ['ip', 'list', '1001']);
    assert.match(list.stdout, /198\.51\.100\.0\/24/);
  });

  it('gives the viewer 403 on a change made with their session, CSRF token and all', async () => {
    const jar = new CookieJar();
    const csrf = await signInToConsole(jar, stack.consoleBase, ADMIN_PEOPLE.viewer);
    const issue = await jar.fetch(`${stack.consoleBase}/api/v1/sites/1001/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: '{}',
    });
    assert.equal(issue.status, 403);
  });

  it('keeps the session in the database: another replica (or the same after a restart) accepts the cookie', async () => {
    const jar = new CookieJar();
    const csrf = await signInToConsole(jar, stack.consoleBase, ADMIN_PEOPLE.manager);
    const cookie = `${SESSION_COOKIE}=${jar.get(stack.consoleBase, SESSION_COOKIE) ?? ''}`;
    const adminPort = await freePort();
    const replica = await startService({
      DATABASE_URL: database.url,
      ...stack.issuer.env(),
      ADMIN_PORT: String(adminPort),
      ADMIN_PUBLIC_URL: `http://127.0.0.1:${adminPort}`,
      ADMIN_OIDC_CLIENT_ID: stack.issuer.clientId,
    });
    try {
      const me = await eventually(
        "the replica to accept the session once it has the provider's keys",
        () => fetch(`http://127.0.0.1:${adminPort}/api/v1/me`, { headers: { cookie } }),
        (answer) => answer.status === 200,
        10_000,
      );
      assert.equal(((await me.json()) as { email?: string }).email, ADMIN_PEOPLE.manager.email);
      const change = await fetch(`http://127.0.0.1:${adminPort}/api/v1/sites/1001/allowlist`, {
        method: 'POST',
        headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'application/json' },
        body: JSON.stringify({ entries: ['192.0.2.0/24'] }),
      });
      assert.equal(change.status, 201, await change.text());
    } finally {
      await replica.stop();
    }
  });

  it('signs out only with the CSRF token; then the session is gone and the page sends to the provider again', async () => {
    const jar = new CookieJar();
    const csrf = await signInToConsole(jar, stack.consoleBase, ADMIN_PEOPLE.manager);
    const forged = await jar.fetch(`${stack.consoleBase}/auth/sign-out`, { method: 'POST' });
    assert.equal(forged.status, 403);
    assert.equal((await jar.fetch(`${stack.consoleBase}/api/v1/me`)).status, 200, 'still signed in');

    const cookie = jar.get(stack.consoleBase, SESSION_COOKIE) ?? '';
    const out = await jar.fetch(`${stack.consoleBase}/auth/sign-out`, { method: 'POST', headers: { 'x-csrf-token': csrf } });
    assert.equal(out.status, 200);
    const next = new URL(((await out.json()) as { next: string }).next);
    assert.equal(next.origin, new URL(stack.issuer.issuer).origin, "on to the provider's end_session endpoint");
    assert.equal(next.searchParams.get('post_logout_redirect_uri'), `${stack.consoleBase}/auth/signed-out`);
    assert.match(setCookieLine(out, SESSION_COOKIE), /Max-Age=0/);

    const replayed = await fetch(`${stack.consoleBase}/api/v1/me`, { headers: { cookie: `${SESSION_COOKIE}=${cookie}` } });
    assert.equal(replayed.status, 401, 'the old cookie no longer works');
    const again = await fetch(`${stack.consoleBase}/`, { headers: { ...PAGE_HEADERS, cookie: `${SESSION_COOKIE}=${cookie}` }, redirect: 'manual' });
    assert.equal(again.status, 302);
    assert.ok(again.headers.get('location')?.startsWith(stack.issuer.authorizationEndpoint));
  });
});

describe('admin console when the provider cannot be reached', () => {
  let database: TestDatabase;
  let service: RunningService;
  let consoleBase: string;

  before(async () => {
    database = await freshDatabase();
    const adminPort = await freePort();
    consoleBase = `http://127.0.0.1:${adminPort}`;
    // A loopback port where nothing listens: discovery fails at once.
    const issuer = `http://127.0.0.1:${await freePort()}`;
    service = await startService({
      DATABASE_URL: database.url,
      ADMIN_ISSUER: issuer,
      ADMIN_AUDIENCE: 'https://authz-admin.test',
      ADMIN_PORT: String(adminPort),
      ADMIN_PUBLIC_URL: consoleBase,
      ADMIN_OIDC_CLIENT_ID: 'sitekey-authz-console',
    });
  });

  after(async () => {
    await service?.stop();
    await database?.drop();
  });

  it('says sign-in is not available (503) and starts no sign-in, and the API still refuses without a session', async () => {
    const answer = await fetch(`${consoleBase}/`, { headers: PAGE_HEADERS, redirect: 'manual' });
    assert.equal(answer.status, 503);
    assert.match(await answer.text(), /cannot be reached/);
    assert.equal(answer.headers.getSetCookie().length, 0);
    assertSecurityHeaders(answer, 'the refusal');
    assert.equal((await fetch(`${consoleBase}/api/v1/me`, { headers: { cookie: `${SESSION_COOKIE}=${'x'.repeat(43)}` } })).status, 401);
  });
});
