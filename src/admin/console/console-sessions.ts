import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { AuthOutcome, RequestAuthenticator } from '../principal.js';
import { cookieNames, readCookie, type CookiePolicy } from './cookies.js';
import type { RelyingParty } from './relying-party.js';
import type { ConsoleSession, SessionStore } from './session-store.js';

/** Verifies an admin access token as the API does for a Bearer header: roles and expiry in one place. */
export type AccessTokenVerifier = (accessToken: string) => Promise<AuthOutcome>;

export interface CurrentSession {
  readonly id: string;
  readonly session: ConsoleSession;
  /** The held access token verified now, after a refresh if it had expired and the provider gave a refresh token. */
  readonly outcome: AuthOutcome;
}

/** The header the pages send the session's CSRF token in, on every request that changes something. */
export const CSRF_HEADER = 'x-csrf-token';
const SAFE_METHODS = new Set(['GET', 'HEAD']);

/** Equal strings, compared in time that does not depend on where they differ. */
export function sameSecret(sent: string | undefined, expected: string): boolean {
  if (sent === undefined) return false;
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(sent), digest(expected));
}

/** The session a request's cookie names, with its access token checked on every use. */
export class ConsoleSessions {
  constructor(
    private readonly store: SessionStore,
    private readonly relyingParty: RelyingParty,
    private readonly verify: AccessTokenVerifier,
    readonly cookies: CookiePolicy,
  ) {}

  cookieId(request: IncomingMessage): string | undefined {
    return readCookie(request, cookieNames(this.cookies).session);
  }

  async current(request: IncomingMessage): Promise<CurrentSession | undefined> {
    const id = this.cookieId(request);
    if (id === undefined) return undefined;
    const session = await this.store.findSession(id);
    if (session === undefined) return undefined;
    const outcome = await this.verify(session.accessToken);
    if (outcome.ok || outcome.status !== 401 || session.refreshToken === undefined) return { id, session, outcome };
    try {
      const tokens = await this.relyingParty.refresh(session.refreshToken);
      await this.store.replaceTokens(id, tokens);
      return { id, session: { ...session, ...tokens, refreshToken: tokens.refreshToken ?? session.refreshToken }, outcome: await this.verify(tokens.accessToken) };
    } catch {
      // The provider refused the refresh (the person signed out there, or was removed): sign in again.
      return { id, session, outcome };
    }
  }
}

/**
 * The console's way to call the JSON API: the session cookie, and on every change the session's CSRF
 * token in X-CSRF-Token. A cross-site page can make the browser send the cookie, never the header.
 */
export class SessionAuthenticator implements RequestAuthenticator {
  constructor(private readonly sessions: ConsoleSessions) {}

  async authenticate(request: IncomingMessage): Promise<AuthOutcome | undefined> {
    if (this.sessions.cookieId(request) === undefined) return undefined;
    const current = await this.sessions.current(request);
    if (current === undefined) {
      return { ok: false, status: 401, error: 'invalid_token', description: 'the console session has ended or is unknown: reload the page to sign in again' };
    }
    if (!SAFE_METHODS.has(request.method ?? 'GET')) {
      const sent = request.headers[CSRF_HEADER];
      if (!sameSecret(typeof sent === 'string' ? sent : undefined, current.session.csrfToken)) {
        return {
          ok: false,
          status: 403,
          error: 'csrf_token_mismatch',
          description: `a change through the console session needs the session's CSRF token in the ${CSRF_HEADER} header (the page sends it; reload the page)`,
        };
      }
    }
    return current.outcome;
  }
}
