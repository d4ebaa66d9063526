import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Readiness {
  /** True when checks can be decided; the detail goes into the /readyz body for operators. */
  readonly ready: boolean;
  readonly detail: Record<string, unknown>;
}

/** The Prometheus exposition served on /metrics. */
export interface MetricsExposition {
  readonly contentType: string;
  scrape(): Promise<string>;
}

/**
 * Limits of the operator HTTP server, stated once (README, "Limits"). Its clients are kubelet probes
 * and a Prometheus scrape: a few small requests, each sent at once. A client that holds a connection
 * open without finishing its request is cut off, so that the probes always find a free place.
 */
export const HTTP_ENDPOINT_LIMITS = Object.freeze({
  /** The request line and headers must have arrived by then, counted from the connection or the previous request (slow-loris). */
  headersTimeoutMs: 5_000,
  /** The whole request, body included. */
  requestTimeoutMs: 10_000,
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: 5_000,
  /** How often node looks for requests past the two time-outs above. */
  connectionsCheckingIntervalMs: 1_000,
  /** Connections at once; beyond, a new one is closed at once. Probes and scrapes need a handful. */
  maxConnections: 32,
});

export type HttpEndpointLimits = { readonly [Limit in keyof typeof HTTP_ENDPOINT_LIMITS]: number };

export interface HttpEndpoints {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Operator endpoints on METRICS_PORT: /healthz (the process is alive), /readyz (it can decide
 * checks: credentials loaded and fresh, not shutting down) and /metrics (Prometheus).
 */
export async function startHttpEndpoints(options: {
  readonly bindAddress: string;
  readonly port: number;
  readonly readiness: () => Readiness;
  readonly metrics?: MetricsExposition;
  /** Production uses HTTP_ENDPOINT_LIMITS; tests shorten its time-outs. */
  readonly limits?: Partial<HttpEndpointLimits>;
}): Promise<HttpEndpoints> {
  const limits: HttpEndpointLimits = { ...HTTP_ENDPOINT_LIMITS, ...options.limits };
  const serverOptions = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: limits.connectionsCheckingIntervalMs,
  };
  const server: Server = createServer(serverOptions, (request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
      response.end(JSON.stringify(body));
    };
    // RFC 9110 §15.5.6: a 405 names the methods that are allowed.
    if (request.method !== 'GET' && request.method !== 'HEAD') return reply(405, { error: 'use GET' }, { allow: 'GET, HEAD' });
    if (path === '/healthz') return reply(200, { status: 'ok' });
    if (path === '/readyz') {
      const { ready, detail } = options.readiness();
      return reply(ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', ...detail });
    }
    if (path === '/metrics' && options.metrics !== undefined) {
      const { metrics } = options;
      metrics.scrape().then(
        (text) => {
          response.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' });
          response.end(text);
        },
        () => reply(500, { error: 'collecting metrics failed' }),
      );
      return;
    }
    return reply(404, { error: 'not found; try /healthz, /readyz or /metrics' });
  });
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.bindAddress, () => resolveListen());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolveClose) => {
        server.closeAllConnections();
        server.close(() => resolveClose());
      }),
  };
}
