import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

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
 * and a Prometheus scrape: a few small requests, each sent at once, never pipelined. Whatever a client
 * does on this port, it must not take the CPU or memory that checks need, nor the places that probes need.
 */
export const HTTP_ENDPOINT_LIMITS = Object.freeze({
  /** The request line and headers must have arrived by then, counted from the connection or the previous request (slow-loris). */
  headersTimeoutMs: 5_000,
  /** The whole request, body included. */
  requestTimeoutMs: 10_000,
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: 5_000,
  /** A connection on which nothing moves, either way, this long is closed: a client that stops reading its answers holds them in memory. */
  socketTimeoutMs: 10_000,
  /** How often node looks for requests past the two time-outs above. */
  connectionsCheckingIntervalMs: 1_000,
  /**
   * Connections at once. At the cap a new connection takes the place of the oldest one that has no
   * request in progress (still sending its headers, or idle), so that slow clients cannot keep a probe out.
   */
  maxConnections: 32,
  /** Requests one connection may have waiting for their answers; a client that pipelines more is disconnected. */
  maxPipelinedRequests: 4,
  /** /metrics answers being prepared or sent at once, over all connections; beyond, 503 at once. */
  maxScrapesInFlight: 8,
  /** /metrics is rendered at most this often; scrapes that arrive meanwhile share the next rendering. */
  metricsMinIntervalMs: 1_000,
  /** Request line and headers, bytes; a kubelet probe or a Prometheus scrape sends a few hundred. */
  maxHeaderBytes: 8_192,
});

export type HttpEndpointLimits = { readonly [Limit in keyof typeof HTTP_ENDPOINT_LIMITS]: number };

export interface HttpEndpoints {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * One rendering shared by every scrape that waits for it, at most one every `minIntervalMs`. A scrape
 * always gets a rendering that began after it arrived, so it never reads counts older than itself.
 */
export function sharedScrape(render: () => Promise<string>, minIntervalMs: number): () => Promise<string> {
  let lastStartedAt = Number.NEGATIVE_INFINITY;
  let rendering: Promise<string> | undefined;
  let next: Promise<string> | undefined;
  const start = (): Promise<string> => {
    lastStartedAt = performance.now();
    const current = render().finally(() => {
      if (rendering === current) rendering = undefined;
    });
    rendering = current;
    return current;
  };
  return () => {
    if (next !== undefined) return next;
    if (rendering === undefined && performance.now() - lastStartedAt >= minIntervalMs) return start();
    const waitingFor = rendering;
    next = (async () => {
      await waitingFor?.catch(() => undefined);
      const pauseMs = lastStartedAt + minIntervalMs - performance.now();
      if (pauseMs > 0) await sleep(pauseMs);
      next = undefined;
      return start();
    })();
    return next;
  };
}

/** What the server knows of one connection: when it came, and the requests it has not been answered yet. */
interface ConnectionState {
  readonly socket: Socket;
  pending: number;
  scrapes: number;
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
    maxHeaderSize: limits.maxHeaderBytes,
  };
  const scrape = options.metrics === undefined ? undefined : sharedScrape(() => options.metrics!.scrape(), limits.metricsMinIntervalMs);
  // In the order they came: the first without a request in progress is the one a newcomer replaces.
  const connections = new Map<Socket, ConnectionState>();
  let scrapesInFlight = 0;

  const server: Server = createServer(serverOptions, (request, response) => {
    const connection = connections.get(request.socket);
    if (connection === undefined || request.socket.destroyed) return;
    // Node answers pipelined requests in order, but hands them all to us as soon as they are read.
    if (++connection.pending > limits.maxPipelinedRequests) {
      request.socket.destroy();
      return;
    }
    let answered = false;
    let isScrape = false;
    response.once('close', () => {
      if (answered) return;
      answered = true;
      connection.pending--;
      if (isScrape) {
        connection.scrapes--;
        scrapesInFlight--;
      }
    });
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
    if (path === '/metrics' && scrape !== undefined && options.metrics !== undefined) {
      if (scrapesInFlight >= limits.maxScrapesInFlight) return reply(503, { error: 'too many scrapes at once; try again in a second' }, { 'retry-after': '1' });
      isScrape = true;
      connection.scrapes++;
      scrapesInFlight++;
      const { contentType } = options.metrics;
      scrape().then(
        (text) => {
          if (response.destroyed) return;
          response.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
          response.end(text);
        },
        () => {
          if (!response.destroyed) reply(500, { error: 'collecting metrics failed' });
        },
      );
      return;
    }
    return reply(404, { error: 'not found; try /healthz, /readyz or /metrics' });
  });

  server.on('connection', (socket: Socket) => {
    const connection: ConnectionState = { socket, pending: 0, scrapes: 0 };
    connections.set(socket, connection);
    socket.once('close', () => {
      connections.delete(socket);
      // Answers still queued on a closed connection may never say 'close' themselves.
      scrapesInFlight -= connection.scrapes;
      connection.scrapes = 0;
    });
    if (connections.size <= limits.maxConnections) return;
    let replaced: ConnectionState | undefined;
    for (const candidate of connections.values()) {
      if (candidate.pending === 0 && candidate !== connection) {
        replaced = candidate;
        break;
      }
    }
    (replaced ?? connection).socket.destroy();
  });
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.setTimeout(limits.socketTimeoutMs);
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
