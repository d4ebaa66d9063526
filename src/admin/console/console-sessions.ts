import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { AuthOutcome, RequestAuthenticator } from '../principal.js';
import { cookieNames, readCookie, type CookiePolicy } from './cookies.js';
import type { RelyingParty } from './relying-party.js';
import type { ConsoleSession, SessionStore } from './session-store.js';

interface CurrentSession {
  readonly id: string;
  readonly session: ConsoleSession;
  /** The held access token verified now, after a refresh if it had expired and there is a refresh token. */
  readonly outcome: AuthOutcome;
}

export const CSRF_HEADER = 'x-csrf-token';
const SAFE_METHODS = new Set(['GET', 'HEAD']);

/** Compared in time that does not depend on where they differ. */
export function sameSecret(sent: string | undefined, expected: string): boolean {
  if (sent === undefined) return false;
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(sent), digest(expected));
}

export function csrfMatches(request: IncomingMessage, csrfToken: string): boolean {
  const sent = request.headers[CSRF_HEADER];
  return sameSecret(typeof sent === 'string' ? sent : undefined, csrfToken);
}

/** The session a request's cookie names, with its access token checked on every use. */
export class ConsoleSessions {
  constructor(
    private readonly store: SessionStore,
    private readonly relyingParty: RelyingParty,
    /** As the API verifies a Bearer token: roles and expiry in one place. */
    private readonly verify: (accessToken: string) => Promise<AuthOutcome>,
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

/** The session cookie, and its CSRF token in a header on every change: another site can send the cookie, never that. */
export class SessionAuthenticator implements RequestAuthenticator {
  constructor(private readonly sessions: ConsoleSessions) {}

  async authenticate(request: IncomingMessage): Promise<AuthOutcome | undefined> {
    if (this.sessions.cookieId(request) === undefined) return undefined;
    const current = await this.sessions.current(request);
    if (current === undefined) {
      return { ok: false, status: 401, error: 'invalid_token', description: 'the console session has ended or is unknown: reload the page to sign in again' };
    }
    const safe = SAFE_METHODS.has(request.method ?? 'GET');
    if (safe || csrfMatches(request, current.session.csrfToken)) return current.outcome;
    return {
      ok: false,
      status: 403,
      error: 'csrf_token_mismatch',
      description: `a change through the console session needs the session's CSRF token in the ${CSRF_HEADER} header (the page sends it; reload the page)`,
    };
  }
}
