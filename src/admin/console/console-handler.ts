import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../observe/logger.js';
import { setSecurityHeaders } from '../http-io.js';
import type { ConsoleHandler } from '../principal.js';
import { clearCookie, cookieNames, setCookie } from './cookies.js';
import { CSRF_HEADER, csrfMatches, type ConsoleSessions } from './console-sessions.js';
import { problemPage, shellPage, SIGNED_OUT_PAGE } from './pages.js';
import type { RelyingParty } from './relying-party.js';
import { newSecretId, type SessionStore } from './session-store.js';
import type { SignInCookies, SignInFound } from './sign-in-cookie.js';
import type { StaticAsset } from './static-assets.js';

/** How long a session lasts from sign-in, whatever the access token's own lifetime. */
const SESSION_SECONDS = 8 * 60 * 60;
const MAX_RETURN_PATH = 512;

const SIGN_IN_NOT_FOUND: Readonly<Record<Exclude<SignInFound['found'], 'pending'>, string>> = {
  none: 'No sign-in was in progress in this browser for this answer (or it took longer than ten minutes). Sign in again from the console page.',
  expired: 'The sign-in took longer than ten minutes. Sign in again from the console page.',
  unreadable: 'The sign-in this browser started could not be read: it was changed, or started before the console changed its key. Sign in again from the console page.',
};
const HTML = 'text/html; charset=utf-8';
const TEXT = 'text/plain; charset=utf-8';

/** Only our own scripts and styles (no inline code: an injected tag runs nothing), our own API, no framing. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'",
].join('; ');

export interface ConsoleRoutesOptions {
  /** Without a trailing slash. */
  readonly publicUrl: string;
  readonly store: SessionStore;
  readonly sessions: ConsoleSessions;
  readonly signIns: SignInCookies;
  readonly relyingParty: RelyingParty;
  readonly assets: ReadonlyMap<string, StaticAsset>;
  readonly logger: Logger;
}

/** A path on the console to come back to after sign-in; anything else (another host, /auth/…) is `/`. */
export function returnPath(requestUrl: URL): string {
  const path = requestUrl.pathname + requestUrl.search;
  if (path.length > MAX_RETURN_PATH || !path.startsWith('/') || path.startsWith('//') || path.includes('\\') || path.startsWith('/auth/')) return '/';
  return path;
}

/** Only a page the person navigates to starts a sign-in: not a favicon, a script or an API call. */
function wantsDocument(request: IncomingMessage): boolean {
  const destination = request.headers['sec-fetch-dest'];
  if (typeof destination === 'string') return destination === 'document';
  return (request.headers.accept ?? '').includes('text/html');
}

function send(response: ServerResponse, status: number, contentType: string, body: string | Buffer, headers: Record<string, string | string[]> = {}): void {
  response.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store', ...headers });
  response.end(body);
}

/** Every path outside /api/: the pages (one shell; the app routes in the browser), /console/ assets, and /auth/. */
export class ConsoleRoutes implements ConsoleHandler {
  private readonly names;

  constructor(private readonly options: ConsoleRoutesOptions) {
    this.names = cookieNames(options.sessions.cookies);
  }

  async handle(request: IncomingMessage, response: ServerResponse): Promise<boolean> {
    const url = new URL(request.url ?? '/', 'http://console.invalid');
    if (url.pathname === '/api' || url.pathname.startsWith('/api/')) return false;
    setSecurityHeaders(response);
    response.setHeader('content-security-policy', CONTENT_SECURITY_POLICY);
    response.setHeader('cross-origin-opener-policy', 'same-origin');
    const method = request.method ?? 'GET';
    if (url.pathname === '/auth/sign-out') {
      if (method !== 'POST') send(response, 405, TEXT, 'sign out with POST\n', { allow: 'POST' });
      else await this.signOut(request, response);
      return true;
    }
    if (method !== 'GET' && method !== 'HEAD') {
      send(response, 405, TEXT, 'the console pages answer GET only\n', { allow: 'GET, HEAD' });
      return true;
    }
    if (url.pathname.startsWith('/console/')) this.asset(url.pathname.slice('/console/'.length), response);
    else if (url.pathname === '/auth/callback') await this.callback(request, url, response);
    else if (url.pathname === '/auth/signed-out') send(response, 200, HTML, SIGNED_OUT_PAGE);
    else await this.page(request, url, response);
    return true;
  }

  private asset(name: string, response: ServerResponse): void {
    const asset = this.options.assets.get(name);
    if (asset === undefined) send(response, 404, TEXT, 'no such console file\n');
    else send(response, 200, asset.contentType, asset.body, { 'cache-control': 'no-cache' });
  }

  private async page(request: IncomingMessage, url: URL, response: ServerResponse): Promise<void> {
    const current = await this.options.sessions.current(request);
    // A person without a console role still gets the page: it shows the API's 403 and how to get one
    // (or its 429 while the port refuses new tokens); only a refused token means signing in again.
    if (current !== undefined && (current.outcome.ok || current.outcome.status !== 401)) {
      return send(response, 200, HTML, shellPage(current.session.csrfToken));
    }
    if (!wantsDocument(request)) return send(response, 401, TEXT, 'not signed in: open the console page to sign in\n');
    let started;
    let signInCookies;
    try {
      started = await this.options.relyingParty.startSignIn(returnPath(url));
      signInCookies = await this.options.signIns.start(request, started.pending, Date.now());
    } catch (error) {
      this.options.logger.warn({ err: error }, 'console sign-in: the provider or the sign-in key cannot be reached');
      return send(response, 503, HTML, problemPage('Sign-in is not available', 'The sign-in provider or the database cannot be reached just now. Try again in a minute.'));
    }
    // A session whose token is refused keeps its cookie until the callback replaces it: the refusal may
    // be passing (the provider's keys not yet fetched after a restart), and the session is then kept.
    send(response, 302, TEXT, 'signing in\n', { location: started.url.href, 'set-cookie': signInCookies });
  }

  private async callback(request: IncomingMessage, url: URL, response: ServerResponse): Promise<void> {
    const cookies = this.options.sessions.cookies;
    const { result, clear } = await this.options.signIns.finish(request, url.searchParams.get('state'), Date.now());
    const clearSignIn = clear === undefined ? [] : [clear];
    const refuse = (status: number, message: string) => send(response, status, HTML, problemPage('Sign-in failed', message), { 'set-cookie': clearSignIn });
    if (result.found !== 'pending') return refuse(400, SIGN_IN_NOT_FOUND[result.found]);
    const { pending } = result;
    const providerError = url.searchParams.get('error');
    if (providerError !== null) {
      this.options.logger.warn({ error: providerError.slice(0, 100), description: url.searchParams.get('error_description')?.slice(0, 300) }, 'console sign-in: the provider refused');
      return refuse(403, 'The sign-in provider refused the sign-in. Ask your administrator for access to the authz console.');
    }
    let tokens;
    try {
      tokens = await this.options.relyingParty.finishSignIn(new URL(`${this.options.publicUrl}/auth/callback${url.search}`), pending);
    } catch (error) {
      this.options.logger.warn({ err: error }, 'console sign-in: the answer from the provider was refused');
      return refuse(400, 'The answer from the sign-in provider did not match the sign-in this browser started. Start again from the console page.');
    }
    // Signing in again in the same browser replaces the session it had.
    const previous = this.options.sessions.cookieId(request);
    if (previous !== undefined) await this.options.store.deleteSession(previous);
    const id = newSecretId();
    await this.options.store.createSession(id, {
      ...tokens,
      csrfToken: newSecretId(),
      expiresAt: new Date(Date.now() + SESSION_SECONDS * 1000),
    });
    this.options.logger.info({ subject: tokens.subject }, 'console sign-in');
    send(response, 302, TEXT, 'signed in\n', {
      location: pending.returnTo,
      'set-cookie': [...clearSignIn, setCookie(cookies, this.names.session, id, SESSION_SECONDS)],
    });
  }

  // Called with fetch (a form's redirect to the provider would break form-action 'self'): answers where to go next.
  // A request without a session gets no Set-Cookie: it cannot clear a cookie its browser did not send.
  private async signOut(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const json = (status: number, body: object, headers: Record<string, string> = {}) =>
      send(response, status, 'application/json', JSON.stringify(body), headers);
    if (!this.fromConsolePage(request)) {
      return json(403, { error: { code: 'CROSS_SITE_REQUEST', message: 'sign out from the console page itself: this request came from another site' } });
    }
    const id = this.options.sessions.cookieId(request);
    const session = id === undefined ? undefined : await this.options.store.findSession(id);
    if (id === undefined || session === undefined) return json(200, { next: '/auth/signed-out' });
    if (!csrfMatches(request, session.csrfToken)) {
      return json(403, { error: { code: 'CSRF_TOKEN_MISMATCH', message: `sign out sends the session's CSRF token in ${CSRF_HEADER}: reload the page and try again` } });
    }
    const ended = await this.options.store.deleteSession(id);
    let next: string = '/auth/signed-out';
    try {
      next = (await this.options.relyingParty.signOutUrl(ended?.idToken))?.href ?? next;
    } catch (error) {
      this.options.logger.warn({ err: error }, 'console sign-out: the provider cannot be reached; signed out here only');
    }
    json(200, { next }, { 'set-cookie': clearCookie(this.options.sessions.cookies, this.names.session) });
  }

  /** Sec-Fetch-Site and Origin, when sent, name the console; a client sending neither is no browser. */
  private fromConsolePage(request: IncomingMessage): boolean {
    const site = request.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') return false;
    const origin = request.headers.origin;
    return origin === undefined || origin === new URL(this.options.publicUrl).origin;
  }
}
