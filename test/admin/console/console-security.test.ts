import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { CONTENT_SECURITY_POLICY, returnPath } from '../../../src/admin/console/console-handler.js';
import { sameSecret } from '../../../src/admin/console/console-sessions.js';
import { clearCookie, cookieNames, readCookie, setCookie } from '../../../src/admin/console/cookies.js';
import { problemPage, shellPage, SIGNED_OUT_PAGE } from '../../../src/admin/console/pages.js';
import { loadStaticAssets } from '../../../src/admin/console/static-assets.js';

const requestWith = (cookie: string | undefined) => ({ headers: cookie === undefined ? {} : { cookie } }) as IncomingMessage;
const ID = 'x'.repeat(43);

describe('console cookies', () => {
  it('are HttpOnly, SameSite=Lax, Path=/ with a Max-Age; Secure with the __Host- prefix only for an https console', () => {
    const plain = setCookie({ secure: false }, 'sitekey-console', ID, 28_800);
    assert.equal(plain, `sitekey-console=${ID}; Path=/; HttpOnly; SameSite=Lax; Max-Age=28800`);
    const secure = setCookie({ secure: true }, cookieNames({ secure: true }).session, ID, 28_800);
    assert.equal(secure, `__Host-sitekey-console=${ID}; Path=/; HttpOnly; SameSite=Lax; Max-Age=28800; Secure`);
    assert.equal(cookieNames({ secure: false }).session, 'sitekey-console');
  });

  it('are cleared with Max-Age=0 and a past Expires', () => {
    assert.match(clearCookie({ secure: false }, 'sitekey-console'), /^sitekey-console=; .*Max-Age=0; Expires=Thu, 01 Jan 1970/);
  });

  const cases: ReadonlyArray<[string, string | undefined, string | undefined]> = [
    ['the named cookie among others', `other=1; sitekey-console=${ID}; more=2`, ID],
    ['no Cookie header', undefined, undefined],
    ['another cookie only', 'sitekey-console-sign-in=' + ID, undefined],
    ['a value we never set (not base64url)', 'sitekey-console=<script>', undefined],
    ['a value too short to be ours', 'sitekey-console=abc', undefined],
    ['a header longer than the admin port takes', `sitekey-console=${ID}; ${'a=b; '.repeat(4_000)}`, undefined],
  ];
  for (const [what, header, expected] of cases) {
    it(`reads ${what}`, () => assert.equal(readCookie(requestWith(header), 'sitekey-console'), expected));
  }
});

describe('CSRF token comparison', () => {
  it('accepts the same token and refuses a missing, shorter, longer or different one', () => {
    assert.equal(sameSecret(ID, ID), true);
    for (const sent of [undefined, '', ID.slice(1), `${ID}x`, `${ID.slice(0, -1)}y`]) assert.equal(sameSecret(sent, ID), false, String(sent));
  });
});

describe('console pages', () => {
  it('have a policy that allows our own scripts and styles only, no framing, no base, no other origin', () => {
    for (const directive of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'", "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) {
      assert.ok(CONTENT_SECURITY_POLICY.split('; ').includes(directive), directive);
    }
    assert.doesNotMatch(CONTENT_SECURITY_POLICY, /unsafe/);
  });

  it('hold no inline script or style, and the shell carries the CSRF token', () => {
    for (const page of [shellPage(ID), SIGNED_OUT_PAGE, problemPage('Sign-in failed', 'Start again.')]) {
      assert.doesNotMatch(page, /<script(?![^>]*\bsrc=)[^>]*>/);
      assert.doesNotMatch(page, /<style|\sstyle=|\son[a-z]+=/);
    }
    assert.match(shellPage(ID), new RegExp(`<meta name="csrf-token" content="${ID}">`));
    assert.throws(() => shellPage('"><script>'));
  });

  it('say only our own words on a problem page, never markup', () => {
    assert.throws(() => problemPage('Sign-in failed', '<img src=x>'));
  });

  it('load their scripts, styles and the vendored Preact and Pico from known files only', () => {
    const assets = loadStaticAssets();
    for (const name of ['app.js', 'api.js', 'preact-htm.js', 'pico.min.css', 'console.css', 'pages/site-keys.js']) assert.ok(assets.has(name), name);
    assert.equal(assets.get('app.js')?.contentType, 'text/javascript; charset=utf-8');
    for (const [name, asset] of assets) {
      if (!name.endsWith('.js') || name === 'preact-htm.js') continue;
      // Every module the pages import is one the server serves.
      for (const [, imported] of asset.body.toString().matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
        const resolved = new URL(imported ?? '', `http://console.invalid/console/${name}`).pathname.slice('/console/'.length);
        assert.ok(assets.has(resolved), `${name} imports ${imported}, which is not served`);
      }
      assert.doesNotMatch(asset.body.toString(), /innerHTML|dangerouslySetInnerHTML|eval\(/, `${name} builds no HTML from strings`);
    }
  });
});

describe('where sign-in returns to', () => {
  const base = 'http://console.invalid';
  const cases: ReadonlyArray<[string, string, string]> = [
    ['a page with its query', '/sites/1001?tab=keys', '/sites/1001?tab=keys'],
    ['the start page', '/', '/'],
    ['another host, written as a network-path reference', '//evil.example/x', '/x'],
    ['a backslash that a browser reads as a slash', '/\\evil.example', '/'],
    ['a sign-in path (no loop)', '/auth/callback?code=x', '/'],
    ['a path too long to be ours', `/${'a'.repeat(600)}`, '/'],
  ];
  for (const [what, target, expected] of cases) {
    it(`is the page asked for, or / for ${what}`, () => assert.equal(returnPath(new URL(target, base)), expected));
  }
});
