import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { MAX_SIGN_INS_AT_ONCE, SIGN_IN_SECONDS, SignInCookies, type PendingSignIn } from '../../../src/admin/console/sign-in-cookie.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const KEY_MATERIAL = Buffer.alloc(32, 7);
const stateOf = (n: number) => `${String(n).padStart(3, '0')}${'s'.repeat(40)}`;
const pending = (n = 1, returnTo = '/sites/1001?tab=keys'): PendingSignIn => ({ state: stateOf(n), nonce: `nonce-${n}`, codeVerifier: `verifier-${n}`.padEnd(43, 'v'), returnTo });
const requestWith = (cookies: ReadonlyArray<readonly [string, string]>) =>
  ({ headers: cookies.length === 0 ? {} : { cookie: cookies.map(([name, value]) => `${name}=${value}`).join('; ') } }) as IncomingMessage;
/** name=value of a Set-Cookie line. */
const pairOf = (line: string): [string, string] => {
  const pair = line.split(';')[0] ?? '';
  const at = pair.indexOf('=');
  return [pair.slice(0, at), pair.slice(at + 1)];
};

function cookiesWith(material = KEY_MATERIAL): SignInCookies {
  return new SignInCookies({ secure: false }, async () => material);
}

async function started(cookies: SignInCookies, signIn: PendingSignIn, at = NOW): Promise<[string, string]> {
  const lines = await cookies.start(requestWith([]), signIn, at);
  assert.equal(lines.length, 1);
  return pairOf(lines[0] ?? '');
}

describe('sign-ins in progress, sealed in a cookie of their own', () => {
  it('gives the callback back what the page load sealed, under a name that carries the state, for ten minutes', async () => {
    const cookies = cookiesWith();
    const lines = await cookies.start(requestWith([]), pending(), NOW);
    assert.match(lines[0] ?? '', new RegExp(`^sitekey-console-sign-in-${stateOf(1)}=[A-Za-z0-9_-]+; Path=/; HttpOnly; SameSite=Lax; Max-Age=${SIGN_IN_SECONDS}$`));
    const cookie = pairOf(lines[0] ?? '');
    const { result, clear } = await cookies.finish(requestWith([cookie]), stateOf(1), NOW + SIGN_IN_SECONDS * 1000 - 1);
    assert.deepEqual(result, { found: 'pending', pending: pending() });
    assert.match(clear ?? '', new RegExp(`^${cookie[0]}=; .*Max-Age=0`));
  });

  it('is __Host- and Secure for an https console', async () => {
    const lines = await new SignInCookies({ secure: true }, async () => KEY_MATERIAL).start(requestWith([]), pending(), NOW);
    assert.match(lines[0] ?? '', /^__Host-sitekey-console-sign-in-[^=]+=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=600; Secure$/);
  });

  it('holds the verifier and nonce sealed, not in clear', async () => {
    const [, value] = await started(cookiesWith(), pending());
    const bytes = Buffer.from(value, 'base64url').toString('latin1');
    assert.ok(!bytes.includes('verifier-1') && !bytes.includes('nonce-1') && !bytes.includes('/sites/1001'));
  });

  it('tells an expired sign-in, a changed cookie, one sealed under another key and one moved to another state apart from a good one', async () => {
    const cookies = cookiesWith();
    const [name, value] = await started(cookies, pending());
    const late = await cookies.finish(requestWith([[name, value]]), stateOf(1), NOW + SIGN_IN_SECONDS * 1000);
    assert.equal(late.result.found, 'expired');
    const changed = value.slice(0, 50) + (value[50] === 'A' ? 'B' : 'A') + value.slice(51);
    assert.equal((await cookies.finish(requestWith([[name, changed]]), stateOf(1), NOW)).result.found, 'unreadable');
    const [, otherKeys] = await started(cookiesWith(Buffer.alloc(32, 9)), pending());
    assert.equal((await cookies.finish(requestWith([[name, otherKeys]]), stateOf(1), NOW)).result.found, 'unreadable');
    const moved = `sitekey-console-sign-in-${stateOf(2)}`;
    assert.equal((await cookies.finish(requestWith([[moved, value]]), stateOf(2), NOW)).result.found, 'unreadable');
  });

  it('finds nothing, and clears nothing, for a state without its cookie or a state that is not one of ours', async () => {
    const cookies = cookiesWith();
    const [name, value] = await started(cookies, pending());
    for (const state of [stateOf(2), null, 'short', `${stateOf(1)}; other=1`]) {
      assert.deepEqual(await cookies.finish(requestWith([[name, value]]), state, NOW), { result: { found: 'none' }, clear: undefined }, String(state));
    }
  });

  it(`keeps ${MAX_SIGN_INS_AT_ONCE} sign-ins at most per browser: a new one ends the unreadable first, then the oldest`, async () => {
    const cookies = cookiesWith();
    const held: Array<[string, string]> = [['sitekey-console-sign-in-junk', 'x'.repeat(60)]];
    for (let n = 1; n < MAX_SIGN_INS_AT_ONCE; n += 1) held.push(await started(cookies, pending(n), NOW + n));
    const lines = await cookies.start(requestWith(held), pending(9), NOW + 10);
    assert.deepEqual(
      lines.map((line) => pairOf(line)[0]),
      ['sitekey-console-sign-in-junk', `sitekey-console-sign-in-${stateOf(9)}`],
    );
    const full = [...held.slice(1), pairOf(lines[1] ?? '')];
    const next = await cookies.start(requestWith(full), pending(10), NOW + 20);
    assert.deepEqual(
      next.map((line) => pairOf(line)[0]),
      [`sitekey-console-sign-in-${stateOf(1)}`, `sitekey-console-sign-in-${stateOf(10)}`],
      'the oldest ends',
    );
  });

  it('stays a small cookie with the longest return path', async () => {
    const [, value] = await started(cookiesWith(), pending(1, `/${'p'.repeat(511)}`));
    assert.ok(value.length <= 1_200, `${value.length} characters`);
  });

  it('asks for the key material once, and again after it could not be read', async () => {
    let asked = 0;
    const cookies = new SignInCookies({ secure: false }, async () => {
      asked += 1;
      if (asked === 1) throw new Error('database down');
      return KEY_MATERIAL;
    });
    await assert.rejects(cookies.start(requestWith([]), pending(), NOW), /database down/);
    await cookies.start(requestWith([]), pending(), NOW);
    await cookies.start(requestWith([]), pending(2), NOW);
    assert.equal(asked, 2);
  });
});
