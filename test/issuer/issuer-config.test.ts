import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, SETTINGS } from '../../src/config.js';
import { DEFAULT_KEY_ROTATION } from '../../src/issuer/signing-keys.js';
import { TRIAL_RESOURCE } from '../../src/config/settings.js';
import { loadIssuerConfig, MAX_TOKEN_TTL_SECONDS } from '../../src/issuer/issuer-config.js';

const TOKEN = 'c2l0ZWtleS1hdXRoei1yZWdpc3RyYXRpb24tdG9rZW4tZm9yLXRlc3Rz';
const PRODUCTION = { ISSUER_URL: 'https://auth.partner-api.example.com', ISSUER_RESOURCE: 'https://partner-api.example.com', ISSUER_REGISTRATION_TOKEN: TOKEN };
const noFile = (path: string): string => {
  throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
};

describe('the issuer settings', () => {
  it('default to trying out on loopback: port 9470, the trial resource, the registration token kept in the database', () => {
    const settings = loadIssuerConfig({});
    assert.equal(settings.port, 9470);
    assert.equal(settings.url, undefined);
    assert.equal(settings.resource, TRIAL_RESOURCE);
    assert.equal(settings.tokenTtlSeconds, 600);
    assert.equal(settings.registrationToken, undefined);
  });

  it('take a production issuer as given, its token from the variable or from a file', () => {
    const settings = loadIssuerConfig({ ...PRODUCTION, ISSUER_PORT: '8080', ISSUER_TOKEN_TTL_SECONDS: '300' });
    assert.deepEqual({ ...settings }, {
      port: 8080,
      url: 'https://auth.partner-api.example.com',
      resource: 'https://partner-api.example.com',
      registrationToken: TOKEN,
      tokenTtlSeconds: 300,
    });
    const { ISSUER_REGISTRATION_TOKEN: _, ...withoutToken } = PRODUCTION;
    const fromFile = loadIssuerConfig({ ...withoutToken, ISSUER_REGISTRATION_TOKEN_FILE: '/run/secrets/token' }, (path) => (path === '/run/secrets/token' ? `${TOKEN}\n` : noFile(path)));
    assert.equal(fromFile.registrationToken, TOKEN);
  });

  it('read exactly the ISSUER_* rows of the settings schema', () => {
    const read = new Set<string>();
    const spy = (env: Record<string, string>) => new Proxy(env, { get: (target, name) => (typeof name === 'string' && read.add(name), Reflect.get(target, name)) });
    loadIssuerConfig(spy({}));
    loadIssuerConfig(spy({ ...PRODUCTION, ISSUER_REGISTRATION_TOKEN: '', ISSUER_REGISTRATION_TOKEN_FILE: '/token' }), () => TOKEN);
    assert.deepEqual([...read].sort(), SETTINGS.map((setting) => setting.name).filter((name) => name.startsWith('ISSUER_')).sort());
  });

  it('keep a retired signing key published longer than the longest token lives', () => {
    assert.ok(DEFAULT_KEY_ROTATION.keepAfterRetiredMs > MAX_TOKEN_TTL_SECONDS * 1000);
    assert.ok(DEFAULT_KEY_ROTATION.publishAheadMs < DEFAULT_KEY_ROTATION.rotateAfterMs);
  });

  const { ISSUER_REGISTRATION_TOKEN: _, ...withoutToken } = PRODUCTION;
  const { ISSUER_RESOURCE: __, ...withoutResource } = PRODUCTION;
  for (const [name, env, variable, reason] of [
    ['an http issuer off loopback', { ...PRODUCTION, ISSUER_URL: 'http://auth.partner-api.example.com' }, 'ISSUER_URL', /must be https:\/\//],
    ['an issuer with a path', { ...PRODUCTION, ISSUER_URL: 'https://auth.example.com/partner' }, 'ISSUER_URL', /without path/],
    ['an issuer that is no URL', { ...PRODUCTION, ISSUER_URL: 'auth.example.com' }, 'ISSUER_URL', /expected an https:\/\/ origin/],
    ['no resource off loopback', withoutResource, 'ISSUER_RESOURCE', /is required with an ISSUER_URL off loopback/],
    ['a resource with a fragment', { ...PRODUCTION, ISSUER_RESOURCE: 'https://partner-api.example.com/#x' }, 'ISSUER_RESOURCE', /fragment/],
    ['a relative resource', { ...PRODUCTION, ISSUER_RESOURCE: 'partner-api' }, 'ISSUER_RESOURCE', /absolute URI/],
    ['no registration token off loopback', withoutToken, 'ISSUER_REGISTRATION_TOKEN', /is required/],
    ['a short registration token', { ...PRODUCTION, ISSUER_REGISTRATION_TOKEN: 'short' }, 'ISSUER_REGISTRATION_TOKEN', /32 to 1024 characters/],
    ['a token with spaces', { ...PRODUCTION, ISSUER_REGISTRATION_TOKEN: `${TOKEN} ${TOKEN}` }, 'ISSUER_REGISTRATION_TOKEN', /A-Z a-z 0-9/],
    ['both the token and its file', { ...PRODUCTION, ISSUER_REGISTRATION_TOKEN_FILE: '/token' }, 'ISSUER_REGISTRATION_TOKEN_FILE', /not both/],
    ['a missing token file', { ...withoutToken, ISSUER_REGISTRATION_TOKEN_FILE: '/nowhere' }, 'ISSUER_REGISTRATION_TOKEN_FILE', /cannot read \/nowhere \(ENOENT\)/],
    ['a port out of range', { ...PRODUCTION, ISSUER_PORT: '70000' }, 'ISSUER_PORT', /from 0 to 65535/],
    ['a lifetime too long', { ...PRODUCTION, ISSUER_TOKEN_TTL_SECONDS: '86401' }, 'ISSUER_TOKEN_TTL_SECONDS', /from 60 to 86400/],
    ['a lifetime too short', { ...PRODUCTION, ISSUER_TOKEN_TTL_SECONDS: '10' }, 'ISSUER_TOKEN_TTL_SECONDS', /from 60 to 86400/],
  ] as const) {
    it(`stop start-up naming the variable: ${name}`, () => {
      assert.throws(
        () => loadIssuerConfig(env, noFile),
        (error: unknown) => error instanceof ConfigError && error.variable === variable && reason.test(error.message) && !error.message.includes(TOKEN),
      );
    });
  }
});
