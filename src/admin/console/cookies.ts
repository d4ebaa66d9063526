import type { IncomingMessage } from 'node:http';

/** How the console's cookies are set: one place for the attributes every one of them carries. */
export interface CookiePolicy {
  /** Secure, and the __Host- prefix, unless ADMIN_PUBLIC_URL is http on a loopback address. */
  readonly secure: boolean;
}

/** The session cookie and the short-lived one that carries a sign-in in progress to the callback. */
export function cookieNames(policy: CookiePolicy): { readonly session: string; readonly signIn: string } {
  // __Host- makes the browser refuse the cookie unless it is Secure, for Path=/ and without Domain.
  const prefix = policy.secure ? '__Host-' : '';
  return { session: `${prefix}sitekey-console`, signIn: `${prefix}sitekey-console-sign-in` };
}

const MAX_COOKIE_HEADER = 8_192;

/** The value of one cookie from the request's Cookie header; undefined when absent or malformed. */
export function readCookie(request: IncomingMessage, name: string): string | undefined {
  const header = request.headers.cookie;
  if (header === undefined || header.length > MAX_COOKIE_HEADER) return undefined;
  for (const part of header.split(';')) {
    const equals = part.indexOf('=');
    if (equals < 0) continue;
    if (part.slice(0, equals).trim() !== name) continue;
    const value = part.slice(equals + 1).trim();
    // Our ids are base64url: anything else was not set by us.
    return /^[A-Za-z0-9_-]{16,128}$/.test(value) ? value : undefined;
  }
  return undefined;
}

/**
 * A Set-Cookie value: HttpOnly, SameSite=Lax, Path=/ always. Lax, not Strict: the provider sends the
 * browser back to /auth/callback by a cross-site redirect, and Strict would leave the cookies behind.
 */
export function setCookie(policy: CookiePolicy, name: string, value: string, maxAgeSeconds: number): string {
  const attributes = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`];
  if (maxAgeSeconds <= 0) attributes.push('Expires=Thu, 01 Jan 1970 00:00:00 GMT');
  if (policy.secure) attributes.push('Secure');
  return attributes.join('; ');
}

export function clearCookie(policy: CookiePolicy, name: string): string {
  return setCookie(policy, name, '', 0);
}
