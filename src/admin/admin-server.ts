import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import type { Config } from '../config.js';
import type { Logger } from '../observe/logger.js';
import { CredentialAdmin } from '../store/credential-admin.js';
import { ApiError, apiErrorOf } from './api-error.js';
import { holdAdminConnections } from './admin-connections.js';
import { readJsonBody, sendError, sendJson, setSecurityHeaders } from './http-io.js';
import { auditActor, hasRole, rolesHeld, type AdminPrincipal, type AuthOutcome, type ConsoleHandler, type RequestAuthenticator } from './principal.js';
import { checkedBody, checkQuery, matchRoute, type AdminRoute } from './route-table.js';
import { SubjectRateLimit } from './subject-rate-limit.js';

/** Limits of the admin port, stated once (docs/admin-api.md, "Admin API"). Its clients are people and their console. */
export const ADMIN_LIMITS = Object.freeze({
  /** A request body; beyond, 413 (before reading, when Content-Length says so). */
  maxBodyBytes: 64 * 1024,
  /** Request line and headers, bytes (a JWT is a few kB). */
  maxHeaderBytes: 16 * 1024,
  /** The request line and headers must have arrived by then (slow-loris); a browser sends them at once. */
  headersTimeoutMs: 5_000,
  /** The whole request, body included. */
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  /** A connection on which nothing moves either way this long is closed (a client that stops reading). */
  socketTimeoutMs: 30_000,
  /** How often node looks for requests past the header and request time-outs. */
  connectionsCheckingIntervalMs: 1_000,
  /**
   * Connections at once. At the cap a new connection takes the place of one without a request being
   * answered: first the oldest sending a request slower than a browser does, then the oldest idle, then
   * the oldest silent past `newConnectionGraceMs` (admin-connections.ts, the operator port's order).
   */
  maxConnections: 256,
  /** Connections at once while newcomers within their grace fill the places above `maxConnections`; beyond, a newcomer is closed at once. */
  maxConnectionsWithNewcomers: 384,
  /** Connections at once from one address (an IPv6 /64); at this cap its newcomer replaces its own slowest, idle or oldest new one. */
  maxConnectionsPerSource: 128,
  /** A new connection, or a request partly sent, is not replaced for this long. */
  newConnectionGraceMs: 1_000,
  /** Per person: this many requests at once, refilled at ratePerSecond; beyond, 429 with Retry-After. */
  rateBurst: 60,
  ratePerSecond: 10,
});

export type AdminLimits = { readonly [Limit in keyof typeof ADMIN_LIMITS]: number };

export const REALM = 'sitekey-authz-admin';

export interface AdminServerOptions {
  readonly bindAddress: string;
  readonly port: number;
  readonly config: Config;
  readonly pool: pg.Pool;
  readonly routes: readonly AdminRoute[];
  /** Tried in order (the Bearer header first, then the console's session); the first that answers decides. */
  readonly authenticators: readonly RequestAuthenticator[];
  /** Every path outside /api/. */
  readonly console?: ConsoleHandler;
  readonly logger: Logger;
  readonly limits?: Partial<AdminLimits>;
}

export interface AdminServer {
  readonly port: number;
  close(): Promise<void>;
}

/** RFC 6750 §3: the challenge, with the error only when credentials were sent. */
function challenge(outcome?: Extract<AuthOutcome, { ok: false }>): string {
  if (outcome === undefined) return `Bearer realm="${REALM}"`;
  const quoted = (text: string) => text.replace(/[\\"]/g, "'");
  return `Bearer realm="${REALM}", error="${quoted(outcome.error)}", error_description="${quoted(outcome.description)}"`;
}

const NOT_FOUND = (path: string) => new ApiError(404, 'NOT_FOUND', `nothing at ${JSON.stringify(path.slice(0, 200))}; the routes are listed in /api/v1/openapi.json`);

/**
 * The admin port: the JSON API under /api/ dispatched on the route table, and the console's pages
 * everywhere else. node:http, bounded: body size, header and request time-outs, a connection cap per
 * address and in all, and a token bucket per person. Every answer has the security headers; no log line holds a header.
 */
export async function startAdminServer(options: AdminServerOptions): Promise<AdminServer> {
  const limits: AdminLimits = { ...ADMIN_LIMITS, ...options.limits };
  const rate = new SubjectRateLimit(limits.rateBurst, limits.ratePerSecond);
  const { logger } = options;

  async function authenticate(request: IncomingMessage): Promise<AuthOutcome | undefined> {
    for (const authenticator of options.authenticators) {
      const outcome = await authenticator.authenticate(request);
      if (outcome !== undefined) return outcome;
    }
    return undefined;
  }

  async function principalFor(route: AdminRoute, request: IncomingMessage): Promise<AdminPrincipal | undefined> {
    if (route.role === 'public') return undefined;
    const outcome = await authenticate(request);
    if (outcome === undefined) {
      throw new ApiError(401, 'UNAUTHENTICATED', 'send an access token from the organisation\'s provider: Authorization: Bearer <token>', { 'www-authenticate': challenge() });
    }
    if (!outcome.ok) {
      if (outcome.status === 429) throw new ApiError(429, 'RATE_LIMITED', outcome.description, { 'retry-after': '1' });
      const code = outcome.status === 401 ? 'UNAUTHENTICATED' : 'FORBIDDEN';
      throw new ApiError(outcome.status, code, outcome.description, outcome.status === 401 ? { 'www-authenticate': challenge(outcome) } : {});
    }
    const { principal } = outcome;
    // Counted before the role is checked: refusals cost a person their budget too.
    const wait = rate.take(principal.subject);
    if (wait > 0) throw new ApiError(429, 'RATE_LIMITED', `too many requests; try again in ${wait} s`, { 'retry-after': String(wait) });
    if (!hasRole(principal, route.role)) {
      throw new ApiError(403, 'FORBIDDEN', `this needs the role ${route.role} (or a higher one); ${rolesHeld(principal)}`, {
        'www-authenticate': challenge({ ok: false, status: 403, error: 'insufficient_scope', description: `the role ${route.role} is needed` }),
      });
    }
    return principal;
  }

  /** `seen` learns the person as soon as they are known, for the log line of a request that fails later. */
  async function answerApi(request: IncomingMessage, response: ServerResponse, path: string, query: URLSearchParams, now: number, seen: { subject?: string }): Promise<number> {
    const { match, allowed } = matchRoute(options.routes, request.method ?? '', path);
    if (match === undefined) {
      if (allowed.length > 0) throw new ApiError(405, 'METHOD_NOT_ALLOWED', `${request.method} is not served here; use ${allowed.join(' or ')}`, { allow: allowed.join(', ') });
      throw NOT_FOUND(path);
    }
    const { route, params } = match;
    const principal = await principalFor(route, request);
    if (principal !== undefined) seen.subject = principal.subject;
    const page = checkQuery(route, query);
    const body = checkedBody(route, await readJsonBody(request, limits.maxBodyBytes));
    const admin = new CredentialAdmin(options.pool, principal === undefined ? undefined : auditActor(principal));
    const result = await route.handle({ principal, params, query, body, page, admin, config: options.config, now });
    const status = route.status ?? 200;
    sendJson(response, status, result);
    return status;
  }

  async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const started = Date.now();
    const target = request.url ?? '/';
    const cut = target.indexOf('?');
    const path = cut === -1 ? target : target.slice(0, cut);
    let status = 0;
    const seen: { subject?: string } = {};
    try {
      if (!path.startsWith('/')) throw new ApiError(400, 'INVALID_REQUEST', 'the request target must be a path');
      if (path === '/api' || path.startsWith('/api/')) {
        status = await answerApi(request, response, path, new URLSearchParams(cut === -1 ? '' : target.slice(cut + 1)), started, seen);
        return;
      }
      setSecurityHeaders(response);
      if (options.console !== undefined && (await options.console.handle(request, response))) {
        status = response.statusCode;
        return;
      }
      throw NOT_FOUND(path);
    } catch (error) {
      const refusal = apiErrorOf(error);
      if (refusal === undefined) logger.error({ err: error, method: request.method, path }, 'admin request failed');
      const sent = refusal ?? new ApiError(500, 'INTERNAL', 'the request failed on our side; it is logged, try again');
      status = sent.status;
      if (response.headersSent) response.destroy();
      else sendError(response, sent);
    } finally {
      // Method, path and outcome only: never a header, a query or a body, which may hold a token or a key.
      logger.info({ method: request.method, path: path.slice(0, 200), status, subject: seen.subject, ms: Date.now() - started }, 'admin request');
    }
  }

  const server: Server = createServer(
    { maxHeaderSize: limits.maxHeaderBytes, connectionsCheckingInterval: limits.connectionsCheckingIntervalMs },
    (request, response) => void answer(request, response),
  );
  server.timeout = limits.socketTimeoutMs;
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  holdAdminConnections(server, limits);
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.bindAddress, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        server.closeIdleConnections();
        // A person's request in progress may finish for a moment; then the rest are cut.
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
      }),
  };
}
