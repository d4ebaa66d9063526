import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { clientMetadata, registerClient } from '../../../src/token/client-registration.js';
import { IssuerRefused, IssuerUnreachable } from '../../../src/token/issuer-http.js';
import { discoverIssuer, IssuerMetadataInvalid } from '../../../src/token/issuer-http.js';

type Handler = (request: IncomingMessage, response: ServerResponse, origin: string) => void;

/** An issuer on loopback whose every answer the test writes; it records what was asked. */
async function scriptedIssuer(handler: Handler) {
  const asked: string[] = [];
  let origin = '';
  const server = createServer((request, response) => {
    asked.push(`${request.method} ${request.url}`);
    handler(request, response, origin);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { origin, asked, close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

const json = (response: ServerResponse, status: number, body: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
const LIMITS = { timeoutMs: 500, maxBytes: 4_096 };

describe("the issuer's metadata for registration (RFC 8414, OpenID Connect Discovery)", () => {
  const closers: Array<() => Promise<void>> = [];
  after(async () => {
    for (const close of closers) await close();
  });

  it('reads RFC 8414 metadata with the well-known path before the issuer path', async () => {
    const issuer = await scriptedIssuer((request, response, origin) => {
      if (request.url === '/.well-known/oauth-authorization-server/tenant') json(response, 200, { issuer: `${origin}/tenant`, token_endpoint: `${origin}/tenant/token`, registration_endpoint: `${origin}/tenant/reg` });
      else json(response, 404, {});
    });
    closers.push(issuer.close);
    const metadata = await discoverIssuer(`${issuer.origin}/tenant`, LIMITS);
    assert.deepEqual(metadata, { issuer: `${issuer.origin}/tenant`, tokenEndpoint: `${issuer.origin}/tenant/token`, registrationEndpoint: `${issuer.origin}/tenant/reg` });
  });

  it('falls back to the OpenID configuration, and tells an issuer without registration', async () => {
    const issuer = await scriptedIssuer((request, response, origin) => {
      if (request.url === '/.well-known/openid-configuration') json(response, 200, { issuer: origin, token_endpoint: `${origin}/token` });
      else json(response, 404, { error: 'not_found' });
    });
    closers.push(issuer.close);
    assert.deepEqual(await discoverIssuer(issuer.origin, LIMITS), { issuer: issuer.origin, tokenEndpoint: `${issuer.origin}/token`, registrationEndpoint: undefined });
    assert.deepEqual(issuer.asked, ['GET /.well-known/oauth-authorization-server', 'GET /.well-known/openid-configuration']);
  });

  const refusals: Array<[string, Handler, RegExp]> = [
    ['a document of another issuer', (_q, response) => json(response, 200, { issuer: 'https://evil.example', token_endpoint: 'https://evil.example/token' }), /names the issuer "https:\/\/evil\.example", not .*: check TOKEN_ISSUER/],
    ['a registration endpoint over http off loopback', (_q, response, origin) => json(response, 200, { issuer: origin, token_endpoint: `${origin}/token`, registration_endpoint: 'http://reg.example/reg' }), /registration_endpoint that is not an https:\/\/ URL/],
    ['no token endpoint', (_q, response, origin) => json(response, 200, { issuer: origin }), /has no token_endpoint/],
    ['a redirect', (_q, response) => response.writeHead(302, { location: 'https://elsewhere.example/' }).end(), /request failed/],
    ['an oversized answer', (_q, response, origin) => json(response, 200, { issuer: origin, padding: 'x'.repeat(10_000) }), /more than the 4096 bytes accepted/],
    ['no answer', () => undefined, /no answer within 0.5 s/],
    ['no document at all', (_q, response) => json(response, 404, {}), /publishes no discovery document: .*answered HTTP 404/],
  ];
  for (const [what, handler, message] of refusals) {
    it(`refuses ${what}, saying so`, async () => {
      const issuer = await scriptedIssuer(handler);
      closers.push(issuer.close);
      await assert.rejects(discoverIssuer(issuer.origin, LIMITS), (error: Error) => (error instanceof IssuerMetadataInvalid || error instanceof IssuerUnreachable) && message.test(error.message));
    });
  }
});

describe('registering a client (RFC 7591) with an issuer that answers oddly', () => {
  const metadata = clientMetadata('Partner API, site 1001', undefined);

  it("passes on the issuer's refusal with its error and description, bounded and printable", async () => {
    const issuer = await scriptedIssuer((_q, response) => json(response, 400, { error: 'invalid_client_metadata', error_description: `bad\u001b[2J ${'x'.repeat(1_000)}` }));
    try {
      await assert.rejects(registerClient(`${issuer.origin}/reg`, 'initial-token', metadata, LIMITS), (error: Error) => {
        assert.ok(error instanceof IssuerRefused);
        assert.equal(error.error, 'invalid_client_metadata');
        assert.match(error.description, /^bad\?\[2J x+$/);
        assert.ok(error.description.length <= 300);
        return true;
      });
    } finally {
      await issuer.close();
    }
  });

  it('deletes a client it could not manage or that authenticates otherwise than asked, and says so', async () => {
    const issuer = await scriptedIssuer((request, response, origin) => {
      if (request.method === 'POST') json(response, 201, { client_id: 'c1', token_endpoint_auth_method: 'client_secret_post', client_secret: 's', registration_client_uri: `${origin}/reg/c1`, registration_access_token: 'rat' });
      else response.writeHead(204).end();
    });
    try {
      await assert.rejects(registerClient(`${issuer.origin}/reg`, 'initial-token', metadata, LIMITS), /token_endpoint_auth_method client_secret_post instead of the client_secret_basic asked for/);
      assert.deepEqual(issuer.asked, ['POST /reg', 'DELETE /reg/c1']);
    } finally {
      await issuer.close();
    }
  });

  it('names the client to delete by hand when the answer gives no way to manage it', async () => {
    const issuer = await scriptedIssuer((_q, response) => json(response, 201, { client_id: 'c2', client_secret: 's' }));
    try {
      await assert.rejects(registerClient(`${issuer.origin}/reg`, 'initial-token', metadata, LIMITS), /no registration_client_uri .*; delete client c2 at the issuer by hand/);
    } finally {
      await issuer.close();
    }
  });
});
