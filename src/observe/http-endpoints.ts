import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { GatedConnection, OperatorConnections } from './operator-connections.js';

export interface Readiness {
  readonly ready: boolean;
  readonly detail: Record<string, unknown>;
}

export interface MetricsExposition {
  readonly contentType: string;
  scrape(): Promise<string>;
}

// Operator port limits (docs/operations.md, "Limits"): no client of it may take what checks or probes need.
export const HTTP_ENDPOINT_LIMITS = Object.freeze({
  /** For a request's line and headers, from the connection or its first byte after an answer (slow-loris). */
  headersTimeoutMs: 5_000,
  keepAliveTimeoutMs: 5_000,
  /** Nothing moving either way: a client that stops reading its answers holds them in memory. */
  socketTimeoutMs: 10_000,
  connectionsCheckingIntervalMs: 1_000,
  /** At the cap a newcomer replaces a connection without a complete request: slow clients cannot keep a probe out. */
  maxConnections: 32,
  /** A connection that has sent nothing yet is not replaced for this long: a probe's request may be on its way. */
  newConnectionGraceMs: 250,
  /** While newcomers within their grace fill the places above `maxConnections`; beyond, a newcomer is closed. */
  maxConnectionsWithNewcomers: 96,
  /** From one address (an IPv6 /64): its newcomer replaces its own oldest, so one source never fills the port. */
  maxConnectionsPerSource: 16,
  /** Complete requests waiting on one connection; a client that pipelines more is disconnected before any is parsed. */
  maxPipelinedRequests: 4,
  /** /metrics answers in flight over all connections; beyond, 503 at once. */
  maxScrapesInFlight: 8,
  /** Scrapes that arrive meanwhile share the next rendering. */
  metricsMinIntervalMs: 1_000,
  /** Request line and headers; a probe or a scrape sends a few hundred bytes. */
  maxHeaderBytes: 8_192,
});

export type HttpEndpointLimits = { readonly [Limit in keyof typeof HTTP_ENDPOINT_LIMITS]: number };

export interface HttpEndpoints {
  readonly port: number;
  close(): Promise<void>;
}

/** One rendering every `minIntervalMs` at most, shared; a scrape always gets one begun after it arrived. */
function sharedScrape(render: () => Promise<string>, minIntervalMs: number): () => Promise<string> {
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

function replyJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
  response.end(JSON.stringify(body));
}

/** Operator endpoints on METRICS_PORT: /healthz, /readyz and /metrics. */
export async function startHttpEndpoints(options: {
  readonly bindAddress: string;
  readonly port: number;
  readonly readiness: () => Readiness;
  readonly metrics?: MetricsExposition;
  readonly limits?: Partial<HttpEndpointLimits>;
}): Promise<HttpEndpoints> {
  const limits: HttpEndpointLimits = { ...HTTP_ENDPOINT_LIMITS, ...options.limits };
  const scrape = options.metrics === undefined ? undefined : sharedScrape(() => options.metrics!.scrape(), limits.metricsMinIntervalMs);
  let scrapesInFlight = 0;

  // The connection is told when its request has been answered, sent or not: then it gives the parser the next.
  const whenAnswered = (request: IncomingMessage, response: ServerResponse, then = () => {}) =>
    response.once('close', () => {
      then();
      const connection: unknown = request.socket;
      if (connection instanceof GatedConnection) connection.requestDone();
    });

  const answer = (request: IncomingMessage, response: ServerResponse) => {
    let isScrape = false;
    whenAnswered(request, response, () => {
      if (isScrape) scrapesInFlight--;
    });
    const path = (request.url ?? '/').split('?')[0];
    const reply = (status: number, body: unknown, headers?: Record<string, string>) => replyJson(response, status, body, headers);
    // RFC 9110 §15.5.6: a 405 names the methods that are allowed. Its body, if any, is never read: the connection ends.
    if (request.method !== 'GET' && request.method !== 'HEAD') return reply(405, { error: 'use GET' }, { allow: 'GET, HEAD', connection: 'close' });
    if (path === '/healthz') return reply(200, { status: 'ok' });
    if (path === '/readyz') {
      const { ready, detail } = options.readiness();
      return reply(ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', ...detail });
    }
    if (path === '/metrics' && scrape !== undefined && options.metrics !== undefined) {
      if (scrapesInFlight >= limits.maxScrapesInFlight) return reply(503, { error: 'too many scrapes at once; try again in a second' }, { 'retry-after': '1' });
      isScrape = true;
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
  };

  // The TCP server in front hands node:http each connection gated: requests reach the parser one at a time.
  const server = createServer({ maxHeaderSize: limits.maxHeaderBytes }, answer);
  // An expectation node does not meet itself (anything but 100-continue) is answered here, so its connection goes on.
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    whenAnswered(request, response);
    replyJson(response, 417, { error: 'send no Expect header' });

  });
  const connections = new OperatorConnections(limits, limits.connectionsCheckingIntervalMs);
  const listener = createTcpServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
    const connection = connections.admit(socket);
    // node:http takes a connection with its first bytes: a silent one, a flood's, never costs a parser.
    if (connection !== undefined) socket.once('data', () => server.emit('connection', connection));
  });
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.setTimeout(limits.socketTimeoutMs);
  await new Promise<void>((resolveListen, reject) => {
    listener.once('error', reject);
    listener.listen(options.port, options.bindAddress, () => resolveListen());
  });
  return {
    port: (listener.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolveClose) => {
        connections.closeAll();
        listener.close(() => resolveClose());
      }),
  };
}
