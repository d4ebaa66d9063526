import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '../../../src/observe/logger.js';
import { IssuerKeys } from '../../../src/token/issuer-keys.js';
import { eventually } from '../../support/eventually.js';
import { signingKey } from '../../support/jwks-server.js';

/** An issuer on loopback whose discovery document a test writes, and its JWKS at /jwks.json. */
async function discoveryServer(document: (issuer: string) => string, jwks: string): Promise<{ issuer: string; server: Server }> {
  let issuer = '';
  const server = createServer((request, response) => {
    if (request.url === '/.well-known/openid-configuration') response.writeHead(200, { 'content-type': 'application/json' }).end(document(issuer));
    else if (request.url === '/jwks.json') response.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
    else response.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { issuer, server };
}

describe("IssuerKeys from an issuer's discovery document (ADMIN_ISSUER)", () => {
  it('follows jwks_uri to the key set', async () => {
    const key = await signingKey('k1');
    const { issuer, server } = await discoveryServer((self) => JSON.stringify({ issuer: self, jwks_uri: `${self}/jwks.json` }), JSON.stringify({ keys: [key.publicJwk] }));
    const keys = new IssuerKeys({ issuer, setting: 'ADMIN_ISSUER', logger: createLogger('silent') });
    try {
      await keys.start();
      assert.equal(keys.loaded, true);
      assert.equal(keys.size, 1);
    } finally {
      await keys.stop();
      server.close();
    }
  });

  const refused: Array<[string, (issuer: string) => string, RegExp]> = [
    ['a document that names another issuer', () => JSON.stringify({ issuer: 'https://evil.example', jwks_uri: 'https://evil.example/jwks.json' }), /names the issuer \\?"https:\/\/evil\.example/],
    ['a jwks_uri over http off loopback', (self) => JSON.stringify({ issuer: self, jwks_uri: 'http://keys.example.com/jwks.json' }), /jwks_uri is not an https:\/\/ URL/],
    ['a document without jwks_uri', (self) => JSON.stringify({ issuer: self }), /has no jwks_uri/],
    ['an oversized document', (self) => JSON.stringify({ issuer: self, jwks_uri: `${self}/jwks.json`, padding: 'x'.repeat(300_000) }), /discovery document is .*more than the 262144 bytes accepted/],
    ['a document that is not JSON', () => '<html>', /discovery document is not JSON/],
  ];
  for (const [what, document, reason] of refused) {
    it(`fetches no keys from ${what}, and says why naming ADMIN_ISSUER`, async () => {
      const key = await signingKey('k1');
      const { issuer, server } = await discoveryServer(document, JSON.stringify({ keys: [key.publicJwk] }));
      const log = new PassThrough();
      let written = '';
      log.on('data', (chunk: Buffer) => (written += chunk.toString()));
      const keys = new IssuerKeys({ issuer, setting: 'ADMIN_ISSUER', logger: createLogger('warn', log) });
      try {
        void keys.start();
        await eventually('the failure logged', async () => written, (text) => text.includes('ADMIN_ISSUER'), 5_000);
        assert.equal(keys.loaded, false);
        assert.match(written, reason);
      } finally {
        await keys.stop();
        server.close();
      }
    });
  }
});

describe("IssuerKeys from an issuer's RFC 8414 metadata (TOKEN_ISSUER without TOKEN_JWKS_URL)", () => {
  it('reads /.well-known/oauth-authorization-server inserted before the issuer path, and only it once it answered', async () => {
    const key = await signingKey('k1');
    const asked: string[] = [];
    let origin = '';
    const server = createServer((request, response) => {
      asked.push(request.url ?? '');
      if (request.url === '/.well-known/oauth-authorization-server/realms/partners') {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer: `${origin}/realms/partners`, jwks_uri: `${origin}/keys` }));
      } else if (request.url === '/keys') response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [key.publicJwk] }));
      else response.writeHead(404).end();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const keys = new IssuerKeys({ issuer: `${origin}/realms/partners`, setting: 'TOKEN_ISSUER', logger: createLogger('silent'), unknownKeyCooldownMs: 0 });
    try {
      await keys.start();
      assert.equal(keys.loaded, true);
      assert.deepEqual(asked, ['/.well-known/oauth-authorization-server/realms/partners', '/keys']);
    } finally {
      await keys.stop();
      server.close();
    }
  });
});
