import type { AdminPerson } from './admin-issuer.js';

/**
 * A browser's part of the console's sign-in, over plain HTTP: a cookie jar per origin, redirects
 * followed by hand so each step can be looked at, and the provider's own login form filled in.
 */
export class CookieJar {
  private readonly cookies = new Map<string, Map<string, string>>();

  /** fetch with this jar's cookies for the URL's origin, without following redirects; keeps what it sets. */
  async fetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
    const target = new URL(url);
    const jar = this.cookies.get(target.origin) ?? new Map<string, string>();
    this.cookies.set(target.origin, jar);
    const headers = new Headers(init.headers);
    if (jar.size > 0) headers.set('cookie', [...jar].map(([name, value]) => `${name}=${value}`).join('; '));
    const answer = await fetch(target, { ...init, headers, redirect: 'manual' });
    for (const line of answer.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at);
      const value = pair.slice(at + 1);
      if (value === '' || /max-age=0/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
    return answer;
  }

  get(origin: string, name: string): string | undefined {
    return this.cookies.get(new URL(origin).origin)?.get(name);
  }

  set(origin: string, name: string, value: string): void {
    const key = new URL(origin).origin;
    const jar = this.cookies.get(key) ?? new Map<string, string>();
    jar.set(name, value);
    this.cookies.set(key, jar);
  }
}

export const PAGE_HEADERS = { accept: 'text/html', 'sec-fetch-dest': 'document' };

export function redirectOf(answer: Response, step: string): URL {
  const location = answer.headers.get('location');
  if (answer.status < 300 || answer.status > 399 || location === null) throw new Error(`${step}: expected a redirect, got ${answer.status}`);
  return new URL(location, answer.url);
}

/**
 * From the authorization URL the console redirected to, through the provider's login page, to the
 * console's callback URL (not yet visited): what a browser does between the two.
 */
export async function signInAtProvider(jar: CookieJar, authorizationUrl: URL, person: AdminPerson): Promise<URL> {
  const loginPage = redirectOf(await jar.fetch(authorizationUrl), 'authorization request');
  const page = await jar.fetch(loginPage);
  if (page.status !== 200) throw new Error(`the provider's login page answered ${page.status}`);
  await page.text();
  const submitted = await jar.fetch(loginPage, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ login: person.email, password: person.password }).toString(),
  });
  const resumed = await jar.fetch(redirectOf(submitted, 'login form'));
  return redirectOf(resumed, 'resumed authorization');
}

/** A signed-in console session for `person`: the jar holds the session cookie; returns the page's CSRF token. */
export async function signInToConsole(jar: CookieJar, consoleBase: string, person: AdminPerson): Promise<string> {
  const start = await jar.fetch(`${consoleBase}/`, { headers: PAGE_HEADERS });
  const callback = await signInAtProvider(jar, redirectOf(start, 'console page'), person);
  const back = await jar.fetch(callback, { headers: PAGE_HEADERS });
  redirectOf(back, 'callback');
  const shell = await jar.fetch(`${consoleBase}/`, { headers: PAGE_HEADERS });
  const html = await shell.text();
  const csrf = /<meta name="csrf-token" content="([A-Za-z0-9_-]+)">/.exec(html)?.[1];
  if (shell.status !== 200 || csrf === undefined) throw new Error(`after sign-in the console page answered ${shell.status} without a CSRF token`);
  return csrf;
}
