import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { loadConfig, type TokenSettings } from '../../src/config.js';

/** A signing key of a test issuer: the private half signs, the public JWK is what the JWKS publishes. */
export interface SigningKey {
  readonly kid: string;
  readonly alg: string;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

export async function signingKey(kid: string, alg = 'RS256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** A JWT signed with the key, header typ at+jwt unless told otherwise; claims are given whole. */
export async function signedToken(key: SigningKey, claims: JWTPayload, header: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt', ...header }).sign(key.privateKey);
}

/**
 * A JWKS endpoint on loopback, as an issuer publishes one: what it serves can be changed (a new key,
 * an outage, an oversized answer), and it counts the fetches.
 */
export class JwksServer {
  private body = '{"keys":[]}';
  private status = 200;
  fetches = 0;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<JwksServer> {
    let jwks: JwksServer | undefined;
    const server = createServer((_request, response) => {
      if (jwks === undefined) return response.end();
      jwks.fetches += 1;
      response.writeHead(jwks.status, { 'content-type': 'application/json' }).end(jwks.body);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    jwks = new JwksServer(server, `http://127.0.0.1:${port}/jwks.json`);
    return jwks;
  }

  publish(keys: readonly SigningKey[]): void {
    this.status = 200;
    this.body = JSON.stringify({ keys: keys.map((key) => key.publicJwk) });
  }

  serve(status: number, body: string): void {
    this.status = status;
    this.body = body;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** Token settings as loadConfig makes them from the TOKEN_* variables. */
export function tokenSettings(issuer: string, audience: string, jwksUrl: string, overrides: Record<string, string> = {}): TokenSettings {
  const tokens = loadConfig({ TOKEN_ISSUER: issuer, TOKEN_AUDIENCE: audience, TOKEN_JWKS_URL: jwksUrl, ...overrides }).tokens;
  assert.ok(tokens);
  return tokens;
}

/** The claims of an RFC 9068 access token for partner-1001, issued a minute before `nowSeconds`, valid 5 more minutes. */
export const tokenClaims = (issuer: string, audience: string, nowSeconds: number, overrides: JWTPayload = {}): JWTPayload => ({
  iss: issuer,
  aud: audience,
  sub: 'partner-1001',
  client_id: 'partner-1001',
  iat: nowSeconds - 60,
  exp: nowSeconds + 300,
  jti: 'token-1',
  ...overrides,
});
