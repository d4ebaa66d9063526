import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';

const ISSUER = { ADMIN_ISSUER: 'https://login.corp.example/realms/staff', ADMIN_AUDIENCE: 'https://authz-admin.corp.example' };

function refusal(env: Record<string, string>): { variable: string; message: string } {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return { variable: error.variable, message: error.message };
  }
  assert.fail(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('the ADMIN_* settings', () => {
  it('leave the admin port off without ADMIN_ISSUER', () => {
    assert.equal(loadConfig({}).admin, undefined);
  });

  it('have the documented defaults, and the partner tokens rules', () => {
    const admin = loadConfig(ISSUER).admin;
    assert.ok(admin);
    assert.equal(admin.port, 9465);
    assert.equal(admin.rolesClaim, 'roles');
    assert.equal(admin.oidcClientId, undefined);
    assert.equal(admin.oidcClientSecret, undefined);
    assert.equal(admin.publicUrl, 'http://127.0.0.1:9465');
    assert.deepEqual(admin.types, ['at+jwt']);
    assert.deepEqual(admin.algorithms, ['RS256', 'PS256', 'ES256', 'EdDSA']);
    assert.equal(admin.clockSkewSeconds, 30);
    assert.ok(Object.isFrozen(admin));
  });

  it('take the token types of ADMIN_TOKEN_TYPES as typ is compared: without case, without application/, each once', () => {
    const types = (value: string) => loadConfig({ ...ISSUER, ADMIN_TOKEN_TYPES: value }).admin?.types;
    assert.deepEqual(types('JWT'), ['jwt']);
    assert.deepEqual(types('at+jwt, JWT, none'), ['at+jwt', 'jwt', 'none']);
    assert.deepEqual(types('application/at+jwt,AT+JWT'), ['at+jwt']);
    assert.deepEqual(types(''), ['at+jwt'], 'empty is the default');
  });

  it('take a console client, a public URL without its trailing slash and another port', () => {
    const admin = loadConfig({
      ...ISSUER,
      ADMIN_PORT: '9500',
      ADMIN_ROLES_CLAIM: 'https://corp.example/claims/roles',
      ADMIN_OIDC_CLIENT_ID: 'authz-console',
      ADMIN_OIDC_CLIENT_SECRET: 's3cret',
      ADMIN_PUBLIC_URL: 'https://authz-admin.corp.example/',
    }).admin;
    assert.equal(admin?.port, 9500);
    assert.equal(admin?.rolesClaim, 'https://corp.example/claims/roles');
    assert.equal(admin?.oidcClientId, 'authz-console');
    assert.equal(admin?.publicUrl, 'https://authz-admin.corp.example');
    assert.equal(loadConfig({ ...ISSUER, ADMIN_PORT: '9500' }).admin?.publicUrl, 'http://127.0.0.1:9500');
  });

  const refused: ReadonlyArray<readonly [string, Record<string, string>, string, RegExp]> = [
    ['an http issuer off loopback', { ...ISSUER, ADMIN_ISSUER: 'http://login.corp.example' }, 'ADMIN_ISSUER', /https:\/\/ \(http:\/\/ only to a loopback address/],
    ['an issuer that is no URL', { ...ISSUER, ADMIN_ISSUER: 'login.corp.example' }, 'ADMIN_ISSUER', /expected an https:\/\/ URL/],
    ['no audience', { ADMIN_ISSUER: ISSUER.ADMIN_ISSUER }, 'ADMIN_AUDIENCE', /is required with ADMIN_ISSUER/],
    ['an admin setting without the issuer', { ADMIN_PORT: '9465' }, 'ADMIN_PORT', /only read with ADMIN_ISSUER/],
    ['the Check port', { ...ISSUER, ADMIN_PORT: '9001' }, 'ADMIN_PORT', /must differ from GRPC_PORT/],
    ['the metrics port', { ...ISSUER, ADMIN_PORT: '9464' }, 'ADMIN_PORT', /must differ from METRICS_PORT/],
    ['the probe port', { ...ISSUER, ADMIN_PORT: '9466', PROBE_PORT: '9466' }, 'ADMIN_PORT', /must differ from PROBE_PORT/],
    ['a port out of range', { ...ISSUER, ADMIN_PORT: '70000' }, 'ADMIN_PORT', /whole number from 0 to 65535/],
    ['a roles claim with a space', { ...ISSUER, ADMIN_ROLES_CLAIM: 'my roles' }, 'ADMIN_ROLES_CLAIM', /claim name/],
    ['a secret without a client', { ...ISSUER, ADMIN_OIDC_CLIENT_SECRET: 'hunter2' }, 'ADMIN_OIDC_CLIENT_SECRET', /only read with ADMIN_OIDC_CLIENT_ID/],
    ['a public URL over http off loopback', { ...ISSUER, ADMIN_PUBLIC_URL: 'http://authz-admin.corp.example' }, 'ADMIN_PUBLIC_URL', /https:\/\//],
    ['a token type of another kind', { ...ISSUER, ADMIN_TOKEN_TYPES: 'at+jwt,id+jwt' }, 'ADMIN_TOKEN_TYPES', /"id\+jwt" is not one of at\+jwt, JWT or none/],
    ['an empty token type', { ...ISSUER, ADMIN_TOKEN_TYPES: 'at+jwt,' }, 'ADMIN_TOKEN_TYPES', /empty item/],
    ['token types without the issuer', { ADMIN_TOKEN_TYPES: 'JWT' }, 'ADMIN_TOKEN_TYPES', /only read with ADMIN_ISSUER/],
    [
      "the console's client id as the API's audience while JWT is accepted: its ID tokens would pass",
      { ...ISSUER, ADMIN_TOKEN_TYPES: 'at+jwt,JWT', ADMIN_OIDC_CLIENT_ID: 'the-one-registration', ADMIN_AUDIENCE: 'the-one-registration' },
      'ADMIN_AUDIENCE',
      /ID tokens would pass as access tokens/,
    ],
    ['a public URL with a query', { ...ISSUER, ADMIN_PUBLIC_URL: 'https://authz-admin.corp.example/?x=1' }, 'ADMIN_PUBLIC_URL', /without query/],
  ];
  for (const [what, env, variable, reason] of refused) {
    it(`stop at start on ${what}, naming ${variable} and the reason`, () => {
      const { variable: named, message } = refusal(env);
      assert.equal(named, variable);
      assert.match(message, reason);
    });
  }

  it('never quote the client secret back', () => {
    const { message } = refusal({ ...ISSUER, ADMIN_OIDC_CLIENT_SECRET: 'hunter2' });
    assert.doesNotMatch(message, /hunter2/);
  });
});
