import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { decodeJwt } from 'jose';
import { forwardedForEntry, parseClientIp } from '../allowlist/client-ip.js';
import type { ClientIpSource } from '../config.js';
import type { TokenEndpointGuard } from './token-endpoint-guard.js';

export const TOKEN_PATH = '/token';
export const REGISTRATION_PATH = '/reg';
export const DISCOVERY_PATH = '/.well-known/openid-configuration';
/** RFC 8414 §3: the same metadata, at the path OAuth 2.0 clients look for. */
export const AUTHORIZATION_SERVER_METADATA_PATH = '/.well-known/oauth-authorization-server';

/** oidc-provider's own limit on a request body; a token request is a few hundred bytes. */
const MAX_TOKEN_REQUEST_BYTES = 56 * 1024;
/** Longer client ids are no client of ours: they share one bucket. */
const MAX_CLIENT_ID = 255;

export type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

function answerJson(response: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
  response.end(JSON.stringify(body));
}

/** RFC 6749 §2.3.1: the id in a Basic header is form-encoded before it is base64-encoded. */
function basicClientId(authorization: string | undefined): string | undefined {
  const match = /^basic +([A-Za-z0-9+/=]+)$/i.exec(authorization?.trim() ?? '');
  if (match === null) return undefined;
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  try {
    return decodeURIComponent(decoded.slice(0, colon).replaceAll('+', ' '));
  } catch {
    return decoded.slice(0, colon);
  }
}

/** The client a token request says it comes from, unverified: for its limit only. */
export function claimedClientId(headers: IncomingHttpHeaders, body: string): string | undefined {
  const form = new URLSearchParams(body);
  let clientId = basicClientId(headers.authorization) ?? form.get('client_id') ?? undefined;
  const assertion = form.get('client_assertion');
  if (clientId === undefined && assertion !== null) {
    try {
      const { sub } = decodeJwt(assertion);
      clientId = typeof sub === 'string' ? sub : undefined;
    } catch {
      clientId = undefined;
    }
  }
  return clientId === undefined || clientId.length <= MAX_CLIENT_ID ? clientId : clientId.slice(0, MAX_CLIENT_ID);
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Chosen by CLIENT_IP_SOURCE; a header that names no IP address falls back to the peer, never the client's pick. */
export function sourceAddress(request: IncomingMessage, source: ClientIpSource): string {
  const peer = request.socket.remoteAddress ?? 'unknown';
  const named =
    source.kind === 'peer'
      ? peer
      : source.kind === 'xff'
        ? forwardedForEntry(headerText(request.headers['x-forwarded-for']), source.trustedHops)
        : headerText(request.headers[source.name])?.trim();
  return parseClientIp(named)?.address ?? parseClientIp(peer)?.address ?? peer;
}

function readBody(request: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolveBody, reject) => {
    const declared = Number(request.headers['content-length']);
    if (declared > limit) return resolveBody(undefined);
    const chunks: Buffer[] = [];
    let received = 0;
    request.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) {
        request.removeAllListeners('data');
        request.resume();
        resolveBody(undefined);
      } else chunks.push(chunk);
    });
    request.once('end', () => resolveBody(received > limit ? undefined : Buffer.concat(chunks)));
    request.once('error', reject);
  });
}

async function guardedTokenRequest(
  request: IncomingMessage,
  response: ServerResponse,
  guard: TokenEndpointGuard,
  provider: RequestListener,
  clientIpSource: ClientIpSource,
): Promise<void> {
  const address = sourceAddress(request, clientIpSource);
  const body = await readBody(request, MAX_TOKEN_REQUEST_BYTES);
  if (body === undefined) {
    return answerJson(response, 413, { error: 'invalid_request', error_description: `the request body is larger than ${MAX_TOKEN_REQUEST_BYTES} bytes` });
  }
  const admission = guard.admit(address, claimedClientId(request.headers, body.toString('utf8')), Date.now());
  if (!admission.admitted) {
    return answerJson(
      response,
      429,
      { error: 'temporarily_unavailable', error_description: `${admission.reason}: retry after ${admission.retryAfterSeconds} s, and reuse each token until shortly before it expires` },
      { 'retry-after': String(admission.retryAfterSeconds) },
    );
  }
  // An answer that never finished is counted as a failed authentication: the reservation stays taken.
  response.once('close', () => admission.settle(response.writableFinished && response.statusCode !== 401));
  // oidc-provider takes a body read before it as the request's body (its selective body parser).
  (request as IncomingMessage & { body?: Buffer }).body = body;
  provider(request, response);
}

function pathOf(target: string): string {
  const queryAt = target.indexOf('?');
  return queryAt < 0 ? target : target.slice(0, queryAt);
}

/** As oidc-provider's router matches a path: without case, one trailing slash dropped, as Koa reads it. */
function routeKey(target: string): string {
  const path = target.startsWith('/') ? pathOf(target) : URL.canParse(target) ? new URL(target).pathname : target;
  return (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path).toUpperCase();
}

// Every POST but registration's (which needs the initial access token) takes the token endpoint's limits, however
// a client spells its path.
function isGuarded(request: IncomingMessage): boolean {
  return request.method === 'POST' && routeKey(request.url ?? '/') !== routeKey(REGISTRATION_PATH);
}

/** The issuer's port in front of oidc-provider: /healthz, RFC 8414's metadata path, the token endpoint's limits. */
export function issuerRequestListener(options: {
  readonly guard: TokenEndpointGuard;
  /** The provider's listener now: it changes when the signing keys do. */
  readonly provider: () => RequestListener;
  readonly clientIpSource: ClientIpSource;
  /** Every URL the provider writes starts with it, whatever Host a request names. */
  readonly issuerUrl: string;
}): RequestListener {
  const issuer = new URL(options.issuerUrl);
  return (request, response) => {
    // Behind the gateway the request arrives over http with the gateway's Host; a client could name
    // another. The provider trusts these two headers only (its proxy setting), and they are ours.
    request.headers['x-forwarded-proto'] = issuer.protocol.slice(0, -1);
    request.headers['x-forwarded-host'] = issuer.host;
    const url = request.url ?? '/';
    const path = pathOf(url);
    if (path === '/healthz') return answerJson(response, 200, { status: 'ok' });
    if (path === AUTHORIZATION_SERVER_METADATA_PATH) request.url = DISCOVERY_PATH + url.slice(path.length);
    if (isGuarded(request)) {
      guardedTokenRequest(request, response, options.guard, options.provider(), options.clientIpSource).catch(() => {
        if (!response.headersSent) answerJson(response, 400, { error: 'invalid_request', error_description: 'the request body could not be read' });
        else response.destroy();
      });
      return;
    }
    options.provider()(request, response);
  };
}
