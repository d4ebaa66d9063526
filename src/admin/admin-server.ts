import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import type { AdminSettings, Config } from '../config.js';
import type { Logger } from '../observe/logger.js';
import { CredentialAdmin } from '../store/credential-admin.js';
import { connectionPool } from '../store/database.js';
import { IssuerKeys } from '../token/issuer-keys.js';
import { ApiError, apiErrorOf } from './api-error.js';
import { holdAdminConnections } from './admin-connections.js';
import { ADMIN_ROUTES } from './admin-routes.js';
import { AdminTokenVerifier, BearerAuthenticator } from './admin-token.js';
import { readJsonBody, sendError, sendJson, setSecurityHeaders } from './http-io.js';
import { auditActor, hasRole, rolesHeld, type AdminPrincipal, type AuthOutcome, type ConsoleHandler, type RequestAuthenticator } from './principal.js';
import { checkedBody, checkQuery, matchRoute, type AdminRoute } from './route-table.js';
import { SubjectRateLimit } from './subject-rate-limit.js';

/** Limits of the admin port (docs/admin-api.md, "Admin API"). Its clients are people and their console. */
export const ADMIN_LIMITS = Object.freeze({
  maxBodyBytes: 64 * 1024,
  maxHeaderBytes: 16 * 1024,
  /** Slow-loris: a browser sends its headers at once. */
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  /** A connection on which nothing moves either way (a client that stops reading). */
  socketTimeoutMs: 30_000,
  connectionsCheckingIntervalMs: 1_000,
  /** At the caps a newcomer replaces a connection without a request being answered (admin-connections.ts). */
  maxConnections: 256,
  maxConnectionsWithNewcomers: 384,
  maxConnectionsPerSource: 128,
  newConnectionGraceMs: 1_000,
  rateBurst: 60,
  ratePerSecond: 10,
});

/** Every wait on the database for one admin request: a change takes its locks, or gives up. */
const ADMIN_QUERY_TIMEOUT_MS = 10_000;
const ADMIN_POOL_SIZE = 4;
const REALM = 'sitekey-authz-admin';

export interface AdminServer {
  readonly port: number;
  close(): Promise<void>;
}

/** What the console adds to the admin port: its pages and sign-in, and its session as a way to authenticate. */
interface ConsoleParts {
  readonly console?: ConsoleHandler;
  readonly authenticator?: RequestAuthenticator;
  close?(): Promise<void>;
}

export type ConsoleFactory = (parts: {
  readonly settings: AdminSettings;
  readonly verifier: AdminTokenVerifier;
  readonly pool: pg.Pool;
  readonly logger: Logger;
}) => Promise<ConsoleParts>;

/** RFC 6750 §3: the challenge, with the error only when credentials were sent. */
function challenge(outcome?: Extract<AuthOutcome, { ok: false }>): string {
  if (outcome === undefined) return `Bearer realm="${REALM}"`;
  const quoted = (text: string) => text.replace(/[\\"]/g, "'");
  return `Bearer realm="${REALM}", error="${quoted(outcome.error)}", error_description="${quoted(outcome.description)}"`;
}

const NOT_FOUND = (path: string) => new ApiError(404, 'NOT_FOUND', `nothing at ${JSON.stringify(path.slice(0, 200))}; the routes are listed in /api/v1/openapi.json`);

/** The admin port, in the primary process: the JSON API under /api/, the console everywhere else. */
export async function startAdmin(
  config: Config,
  settings: AdminSettings,
  databaseUrl: string,
  parentLogger: Logger,
  options: { readonly console?: ConsoleFactory } = {},
): Promise<AdminServer> {
  const logger = parentLogger.child({ component: 'admin' });
  const keys = new IssuerKeys({ issuer: settings.issuer, setting: 'ADMIN_ISSUER', logger });
  void keys.start();
  const pool = connectionPool(databaseUrl, { applicationName: 'sitekey-authz-admin', max: ADMIN_POOL_SIZE, logger, timeoutMs: ADMIN_QUERY_TIMEOUT_MS });
  const verifier = new AdminTokenVerifier(settings, keys);
  let consoleParts: ConsoleParts = {};
  const closeParts = async () => {
    await consoleParts.close?.();
    await keys.stop();
    await pool.end();
  };
  let server: Server;
  try {
    consoleParts = (await options.console?.({ settings, verifier, pool, logger })) ?? {};
    const bearer = new BearerAuthenticator(verifier, settings.xffTrustedHops);
    const authenticators = consoleParts.authenticator === undefined ? [bearer] : [bearer, consoleParts.authenticator];
    server = await listen(config, settings.port, pool, authenticators, consoleParts.console, logger);
  } catch (error) {
    await closeParts();
    throw error;
  }
  const port = (server.address() as AddressInfo).port;
  logger.info({ port, issuer: settings.issuer, console: consoleParts.console !== undefined }, 'admin API listening (/api/v1)');
  return {
    port,
    close: async () => {
      await new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        server.closeIdleConnections();
        // A person's request in progress may finish for a moment; then the rest are cut.
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
      });
      await closeParts();
    },
  };
}

/** Authenticators are tried in order (Bearer header, then the console's session); the first to answer decides. */
async function listen(
  config: Config,
  port: number,
  pool: pg.Pool,
  authenticators: readonly RequestAuthenticator[],
  consoleHandler: ConsoleHandler | undefined,
  logger: Logger,
): Promise<Server> {
  const limits = ADMIN_LIMITS;
  const rate = new SubjectRateLimit(limits.rateBurst, limits.ratePerSecond);

  async function principalFor(role: AdminRoute['role'], request: IncomingMessage): Promise<AdminPrincipal | undefined> {
    if (role === 'public') return undefined;
    let outcome: AuthOutcome | undefined;
    for (const authenticator of authenticators) outcome ??= await authenticator.authenticate(request);
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
    if (!hasRole(principal, role)) {
      throw new ApiError(403, 'FORBIDDEN', `this needs the role ${role} (or a higher one); ${rolesHeld(principal)}`, {
        'www-authenticate': challenge({ ok: false, status: 403, error: 'insufficient_scope', description: `the role ${role} is needed` }),
      });
    }
    return principal;
  }

  /** `seen` learns the person as soon as they are known, for the log line of a request that fails later. */
  async function answerApi(request: IncomingMessage, response: ServerResponse, path: string, query: URLSearchParams, now: number, seen: { subject?: string }): Promise<number> {
    const { match, allowed } = matchRoute(ADMIN_ROUTES, request.method ?? '', path);
    if (match === undefined) {
      if (allowed.length > 0) throw new ApiError(405, 'METHOD_NOT_ALLOWED', `${request.method} is not served here; use ${allowed.join(' or ')}`, { allow: allowed.join(', ') });
      throw NOT_FOUND(path);
    }
    const { route, params } = match;
    const principal = await principalFor(route.role, request);
    if (principal !== undefined) seen.subject = principal.subject;
    const page = checkQuery(route, query);
    const body = checkedBody(route, await readJsonBody(request, limits.maxBodyBytes));
    const admin = new CredentialAdmin(pool, principal === undefined ? undefined : auditActor(principal));
    const result = await route.handle({ principal, params, query, body, page, admin, config, now });
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
      if (consoleHandler !== undefined && (await consoleHandler.handle(request, response))) {
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
    server.listen(port, config.bindAddress, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  return server;
}
