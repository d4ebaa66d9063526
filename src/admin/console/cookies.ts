import type { IncomingMessage } from 'node:http';

export interface CookiePolicy {
  /** Secure, and the __Host- prefix, unless ADMIN_PUBLIC_URL is http on a loopback address. */
  readonly secure: boolean;
}

/** The session cookie, and the start of the name of each cookie that carries a sign-in in progress. */
export function cookieNames(policy: CookiePolicy): { readonly session: string; readonly signInPrefix: string } {
  // __Host- makes the browser refuse the cookie unless it is Secure, for Path=/ and without Domain.
  const prefix = policy.secure ? '__Host-' : '';
  return { session: `${prefix}sitekey-console`, signInPrefix: `${prefix}sitekey-console-sign-in-` };
}

/** The admin port's bound on all headers together (admin-server.ts). */
const MAX_COOKIE_HEADER = 16_384;
/** Our values are base64url. */
const OUR_VALUE = /^[A-Za-z0-9_-]+$/;
const SESSION_ID_LENGTH = { min: 16, max: 128 };

function cookiePairs(request: IncomingMessage): Array<{ readonly name: string; readonly value: string }> {
  const header = request.headers.cookie;
  if (header === undefined || header.length > MAX_COOKIE_HEADER) return [];
  const pairs = [];
  for (const part of header.split(';')) {
    const equals = part.indexOf('=');
    if (equals >= 0) pairs.push({ name: part.slice(0, equals).trim(), value: part.slice(equals + 1).trim() });
  }
  return pairs;
}

/** A session id unless a longer value is allowed; undefined when absent or not one of ours. */
export function readCookie(request: IncomingMessage, name: string, maxLength = SESSION_ID_LENGTH.max): string | undefined {
  const value = cookiePairs(request).find((pair) => pair.name === name)?.value;
  if (value === undefined || value.length < SESSION_ID_LENGTH.min || value.length > maxLength || !OUR_VALUE.test(value)) return undefined;
  return value;
}

export function cookiesNamed(request: IncomingMessage, prefix: string): Array<{ readonly name: string; readonly value: string }> {
  return cookiePairs(request).filter((pair) => pair.name.startsWith(prefix));
}

/** Lax, not Strict: the provider sends the browser back to /auth/callback by a cross-site redirect. */
export function setCookie(policy: CookiePolicy, name: string, value: string, maxAgeSeconds: number): string {
  const attributes = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`];
  if (maxAgeSeconds <= 0) attributes.push('Expires=Thu, 01 Jan 1970 00:00:00 GMT');
  if (policy.secure) attributes.push('Secure');
  return attributes.join('; ');
}

export function clearCookie(policy: CookiePolicy, name: string): string {
  return setCookie(policy, name, '', 0);
}
