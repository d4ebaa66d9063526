import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { discoveryUrls } from '../../src/token/issuer-http.js';

describe('discoveryUrls: where an issuer publishes its metadata', () => {
  const cases: Array<[string, readonly string[]]> = [
    ['https://login.example.com', ['https://login.example.com/.well-known/oauth-authorization-server', 'https://login.example.com/.well-known/openid-configuration']],
    [
      'https://login.example.com/realms/partners/',
      ['https://login.example.com/.well-known/oauth-authorization-server/realms/partners', 'https://login.example.com/realms/partners/.well-known/openid-configuration'],
    ],
  ];
  for (const [issuer, expected] of cases) it(`RFC 8414 first, then OpenID Connect, for ${issuer}`, () => assert.deepEqual(discoveryUrls(issuer), expected));
});
