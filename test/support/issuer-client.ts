import { request } from 'node:http';
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/**
 * What a partner and the registration side send to `sitekey-authz issuer`, over plain node:http so
 * that a test can choose the source address (127.0.0.2 is loopback too) for the per-address limits.
 */

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Record<string, unknown>;
}

export function send(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string } = {},
): Promise<HttpAnswer> {
  return new Promise((resolveAnswer, reject) => {
    const call = request(url, { method: options.method ?? 'GET', headers: options.headers, localAddress: options.localAddress, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: Record<string, unknown> = {};
        try {
          body = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
        } catch {
          body = { text };
        }
        resolveAnswer({ status: response.statusCode ?? 0, headers: response.headers, body });
      });
      response.on('error', reject);
    });
    call.on('error', reject);
    call.end(options.body);
  });
}

export function sendJson(url: string, method: string, bearer: string | undefined, body?: object): Promise<HttpAnswer> {
  return send(url, {
    method,
    headers: { ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** RFC 6749 §2.3.1: id and secret form-encoded, joined, base64-encoded. */
export function basic(clientId: string, clientSecret: string): string {
  const encode = (value: string): string => new URLSearchParams({ v: value }).toString().slice(2);
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
}

export interface TokenRequest {
  readonly basic?: { readonly clientId: string; readonly clientSecret: string };
  readonly assertion?: string;
  readonly resource?: string;
  readonly scope?: string;
  readonly localAddress?: string;
}

/** grant_type=client_credentials at the token endpoint, authenticated one of the two ways. */
export function requestToken(tokenEndpoint: string, how: TokenRequest): Promise<HttpAnswer> {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (how.resource !== undefined) form.set('resource', how.resource);
  if (how.scope !== undefined) form.set('scope', how.scope);
  if (how.assertion !== undefined) {
    form.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    form.set('client_assertion', how.assertion);
  }
  return send(tokenEndpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(how.basic === undefined ? {} : { authorization: basic(how.basic.clientId, how.basic.clientSecret) }),
    },
    body: form.toString(),
    localAddress: how.localAddress,
  });
}

export interface PartnerKey {
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

export async function partnerKey(): Promise<PartnerKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid: randomUUID(), alg: 'ES256', use: 'sig' };
  return { privateKey, publicJwk };
}

/** An RFC 7523 client assertion, `aud` = the issuer identifier. */
export function clientAssertion(key: PartnerKey, clientId: string, issuer: string): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: key.publicJwk.kid as string })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(issuer)
    .setJti(randomUUID())
    .setIssuedAt()
    .setExpirationTime('2m')
    .sign(key.privateKey);
}
