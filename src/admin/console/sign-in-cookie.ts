import { hkdfSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { openBox, sealBox } from '../../common/sealed-box.js';
import { clearCookie, cookieNames, cookiesNamed, readCookie, setCookie, type CookiePolicy } from './cookies.js';

export interface PendingSignIn {
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
  /** A path on the console (starting with a single /) to return to once signed in. */
  readonly returnTo: string;
}

/** How long the browser has at the provider's login page. */
export const SIGN_IN_SECONDS = 10 * 60;
/** Tabs opened together each start one; a new one beyond ends the oldest, so the Cookie header stays small. */
export const MAX_SIGN_INS_AT_ONCE = 4;
/** A sealed sign-in with the longest return path, base64url. */
const MAX_SEALED_LENGTH = 1_200;
/** As openid-client makes it: 32 random bytes, base64url. */
const STATE = /^[A-Za-z0-9_-]{43}$/;

// none: no cookie for this state (another browser, a replay, Max-Age passed); expired: past the sealed expiry;
// unreadable: changed, sealed under another key, or not ours.
export type SignInFound =
  | { readonly found: 'pending'; readonly pending: PendingSignIn }
  | { readonly found: 'none' | 'expired' | 'unreadable' };

type SealedSignIn = Omit<PendingSignIn, 'state'> & { readonly expiresAt: number };

// Sign-ins in progress, kept by the browser: a cookie per sign-in named after its state, sealed under a key every
// replica shares, with the name as additional data so a value cannot move to another state.
export class SignInCookies {
  private key: Promise<Buffer> | undefined;
  private readonly prefix: string;

  constructor(
    private readonly policy: CookiePolicy,
    /** Asked for once, and again after a failure. */
    private readonly keyMaterial: () => Promise<Buffer>,
  ) {
    this.prefix = cookieNames(policy).signInPrefix;
  }

  /** A console that starts with its database answers its first sign-in at once. */
  ready(): Promise<Buffer> {
    if (this.key === undefined) {
      const loading = this.keyMaterial().then((material) => Buffer.from(hkdfSync('sha256', material, '', 'sitekey-authz console sign-in cookie v1', 32)));
      loading.catch(() => (this.key = undefined));
      this.key = loading;
    }
    return this.key;
  }

  private nameOf(state: string): string {
    return `${this.prefix}${state}`;
  }

  /** Set-Cookie lines: `pending`'s own cookie, and the end of the oldest beyond the bound. */
  async start(request: IncomingMessage, pending: PendingSignIn, now: number): Promise<string[]> {
    if (!STATE.test(pending.state)) throw new Error('a sign-in state is 32 random bytes, base64url');
    const key = await this.ready();
    const name = this.nameOf(pending.state);
    const sealed: SealedSignIn = { nonce: pending.nonce, codeVerifier: pending.codeVerifier, returnTo: pending.returnTo, expiresAt: now + SIGN_IN_SECONDS * 1000 };
    const value = sealBox(key, Buffer.from(JSON.stringify(sealed), 'utf8'), Buffer.from(name, 'utf8')).toString('base64url');
    return [...this.oldestBeyondBound(request, key, now).map((old) => clearCookie(this.policy, old)), setCookie(this.policy, name, value, SIGN_IN_SECONDS)];
  }

  /** With the Set-Cookie line that ends it. */
  async finish(request: IncomingMessage, state: string | null, now: number): Promise<{ readonly result: SignInFound; readonly clear: string | undefined }> {
    if (state === null || !STATE.test(state)) return { result: { found: 'none' }, clear: undefined };
    const name = this.nameOf(state);
    const value = readCookie(request, name, MAX_SEALED_LENGTH);
    if (value === undefined) return { result: { found: 'none' }, clear: undefined };
    const sealed = this.open(await this.ready(), name, value);
    const clear = clearCookie(this.policy, name);
    if (sealed === undefined) return { result: { found: 'unreadable' }, clear };
    if (sealed.expiresAt <= now) return { result: { found: 'expired' }, clear };
    return { result: { found: 'pending', pending: { state, nonce: sealed.nonce, codeVerifier: sealed.codeVerifier, returnTo: sealed.returnTo } }, clear };
  }

  private open(key: Buffer, name: string, value: string): SealedSignIn | undefined {
    const plain = openBox(key, Buffer.from(value, 'base64url'), Buffer.from(name, 'utf8'));
    if (plain === undefined) return undefined;
    try {
      // Not JSON, or JSON null, throws here.
      const { nonce, codeVerifier, returnTo, expiresAt } = JSON.parse(plain.toString('utf8')) as Partial<Record<keyof SealedSignIn, unknown>>;
      if (typeof nonce !== 'string' || typeof codeVerifier !== 'string' || typeof returnTo !== 'string' || typeof expiresAt !== 'number') return undefined;
      return { nonce, codeVerifier, returnTo, expiresAt };
    } catch {
      return undefined;
    }
  }

  /** The sign-in cookies beyond what leaves room for one more: the unreadable and expired first, then the oldest. */
  private oldestBeyondBound(request: IncomingMessage, key: Buffer, now: number): string[] {
    const carried = cookiesNamed(request, this.prefix);
    const excess = carried.length - (MAX_SIGN_INS_AT_ONCE - 1);
    if (excess <= 0) return [];
    const byAge = carried.map(({ name, value }) => ({ name, expiresAt: this.open(key, name, value)?.expiresAt ?? 0 })).sort((a, b) => a.expiresAt - b.expiresAt);
    return byAge.slice(0, excess).map(({ name }) => name);
  }
}
