import { RateLimit } from '../common/rate-limit.js';
import { Server, ServerCredentials, setLogger as setGrpcLogger, type ServerOptions } from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { format } from 'node:util';
import { HealthImplementation, type ServingStatus } from 'grpc-health-check';
import type { Logger } from '../observe/logger.js';
import type { GrpcTlsFiles } from '../config.js';
import { createAuthorizationService, type AuthorizationServiceDeps } from './authorization-service.js';
import { endIncompleteRequests, IncompleteRequestBudget, unlimitedBudget } from './incomplete-requests.js';
import { grpcTlsCredentials } from './tls-credentials.js';
import { checkRequestReader } from './check-request-reader.js';
import { AUTHORIZATION_SERVICE_NAME, authorizationServiceReading } from './proto.js';
import { namesReadBy } from './request-view.js';

/** The names grpc.health.v1.Health answers for: the whole server ('') and the ext_authz service. */
export const HEALTH_SERVICE_NAMES: readonly string[] = ['', AUTHORIZATION_SERVICE_NAME];

/**
 * Every limit of the gRPC port, stated once (docs/operations.md, "Limits", names the Envoy setting each must agree
 * with). Envoy keeps a few long-lived HTTP/2 connections to ext_authz and sends each CheckRequest whole,
 * at once; a client that comes near these limits is holding resources, not asking for checks.
 */
/** How often a draining server looks whether its last connection has closed. */
const DRAIN_POLL_MS = 50;

export const GRPC_LIMITS = Object.freeze({
  /**
   * A connection that has not sent the HTTP/2 preface and its SETTINGS by then is dropped. Envoy sends
   * them with the TCP handshake; grpc-js has no such time-out (a silent socket would get a session and
   * live until the idle time-out), so startGrpcServer enforces it.
   */
  handshakeTimeoutMs: 5_000,
  /**
   * At GRPC_MAX_CONNECTIONS, a newcomer takes the place of the oldest connection that has not sent
   * the preface this long after it was accepted (Envoy sends it with the handshake), else it is
   * refused: silent connections, opened faster than the handshake time-out closes them, cannot keep
   * Envoy out. A connection that has sent the preface is never closed for a newcomer.
   */
  silentConnectionGraceMs: 250,
  /**
   * grpc.max_connection_idle_ms: a connection with no call open for this long is closed (GOAWAY).
   * Envoy's cluster idle_timeout (common_http_protocol_options, 1 h by default) should be shorter, so
   * that Envoy, not a GOAWAY racing a new check, ends an idle connection.
   */
  idleTimeoutMs: 5 * 60_000,
  /**
   * A call whose request (headers, message and end of stream) has not all arrived by then is answered
   * DEADLINE_EXCEEDED and its stream reset. Envoy's ext_authz `timeout` (0.2 s by default) gave up long
   * before; grpc-js itself waits for ever unless the client sent grpc-timeout.
   */
  requestTimeoutMs: 10_000,
  /**
   * grpc.max_concurrent_streams (SETTINGS_MAX_CONCURRENT_STREAMS): calls open at once on one
   * connection. Envoy honours it, opening another connection or queueing; RFC 9113 §6.5.2 recommends
   * no less than 100.
   */
  maxConcurrentStreams: 100,
  /**
   * grpc.max_receive_message_length is MAX_BODY_BYTES plus this: room in a CheckRequest for what is not
   * the body: headers (Envoy's max_request_headers_kb, 60 KiB by default, with the path a second time in
   * attributes.request.http.path), addresses, context extensions and metadata.
   */
  messageHeadroomBytes: 256 * 1024,
  /**
   * Bytes of requests that have begun but not all arrived, over every connection of the process. Each
   * stream may hold up to a whole message (MAX_BODY_BYTES plus the headroom above) and each connection
   * 100 streams: ~125 MiB a connection, beyond any pod's memory after a few. Past this budget the oldest
   * incomplete requests are answered RESOURCE_EXHAUSTED and their streams reset. Never below one
   * largest message, so that one Envoy request always fits.
   */
  incompleteRequestBytesBudget: 64 * 1024 * 1024,
  /**
   * WORKERS above 1: a connection the primary handed to a worker that has not taken it by then is let
   * go of by the primary (the worker could not receive it: at its open-file limit, say), so that it
   * closes instead of hanging. A worker takes one within milliseconds; as long as the handshake
   * time-out, so that only a worker stalled that long loses one.
   */
  handoffReceiptTimeoutMs: 5_000,
  /** Pings find a connection whose peer vanished without a FIN; Envoy answers them. */
  keepaliveTimeMs: 30_000,
  keepaliveTimeoutMs: 10_000,
  /** Envoy reconnects now and then, so its load spreads again over replicas started later. */
  maxConnectionAgeMs: 10 * 60_000,
  maxConnectionAgeGraceMs: 30_000,
  /**
   * When the open-file limit is low, GRPC_MAX_CONNECTIONS is lowered to leave this many descriptors
   * (or half of them, if more) for /readyz, /metrics, the database and logs: a flood of gRPC
   * connections must not make the process unable to accept its probes.
   */
  reservedFileDescriptors: 128,
  /**
   * With TLS, how often the certificate files are read again: cert-manager renews well before expiry
   * and kubelet updates a Secret volume within about a minute, so a renewed certificate reaches new
   * connections within that minute and this.
   */
  tlsFileCheckMs: 10_000,
});

export type GrpcLimits = { readonly [Limit in keyof typeof GRPC_LIMITS]: number };

/** The grpc-js server options that carry GRPC_LIMITS (the handshake time-out and the connection cap are ours). */
export function grpcServerOptions(limits: GrpcLimits, maxBodyBytes: number, budget: IncompleteRequestBudget = unlimitedBudget()): ServerOptions {
  return {
    'grpc.max_receive_message_length': maxBodyBytes + limits.messageHeadroomBytes,
    'grpc.max_concurrent_streams': limits.maxConcurrentStreams,
    'grpc.max_connection_idle_ms': limits.idleTimeoutMs,
    'grpc.keepalive_time_ms': limits.keepaliveTimeMs,
    'grpc.keepalive_timeout_ms': limits.keepaliveTimeoutMs,
    'grpc.max_connection_age_ms': limits.maxConnectionAgeMs,
    'grpc.max_connection_age_grace_ms': limits.maxConnectionAgeGraceMs,
    // First, so that it is handed grpc-js's own call (see http2StreamOf).
    interceptors: [endIncompleteRequests(limits.requestTimeoutMs, budget)],
  };
}


/** The soft open-file limit in /proc/self/limits text; undefined when unlimited or not found. */
export function openFileLimit(procLimits: string): number | undefined {
  const soft = /^Max open files\s+(\d+)/m.exec(procLimits)?.[1];
  return soft === undefined ? undefined : Number(soft);
}

/** GRPC_MAX_CONNECTIONS, lowered if need be so that a full gRPC port leaves descriptors for everything else. */
export function grpcConnectionCap(configured: number, openFiles: number | undefined, reservedFileDescriptors: number): number {
  if (openFiles === undefined) return configured;
  const available = Math.max(openFiles - reservedFileDescriptors, Math.floor(openFiles / 2));
  return Math.max(1, Math.min(configured, available));
}

function processOpenFileLimit(): number | undefined {
  try {
    return openFileLimit(readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    return undefined; // not Linux: GRPC_MAX_CONNECTIONS as configured
  }
}

/** grpcConnectionCap for this process's own open-file limit, with that limit. */
export function processConnectionCap(configured: number, reservedFileDescriptors: number): { maxConnections: number; openFileLimit: number | undefined } {
  const openFiles = processOpenFileLimit();
  return { maxConnections: grpcConnectionCap(configured, openFiles, reservedFileDescriptors), openFileLimit: openFiles };
}

/** What a client sends first: the connection preface (24 bytes) and its SETTINGS frame header (9), RFC 9113 §3.4. */
const CLIENT_PREFACE_BYTES = 24 + 9;

/** Destroys the socket unless the client has sent its HTTP/2 preface and SETTINGS within timeoutMs. */
function dropUnlessHandshakeWithin(socket: Socket, timeoutMs: number): void {
  const timer = setTimeout(() => {
    // Timers run before I/O in an event-loop turn: after a stall, let the preface that may be waiting be read first.
    setImmediate(() => {
      if (socket.bytesRead < CLIENT_PREFACE_BYTES) socket.destroy();
    });
  }, timeoutMs);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

export interface GrpcServerOptions {
  /** An IP address: 0.0.0.0, ::, 127.0.0.1 … */
  readonly bindAddress: string;
  /** 0 picks a free port; see AuthzGrpcServer.port. */
  readonly port: number;
  readonly authorization: AuthorizationServiceDeps;
  readonly logger: Logger;
  /** MAX_BODY_BYTES: the largest body Envoy forwards; the message size limit adds room for headers. */
  readonly maxBodyBytes: number;
  /** GRPC_MAX_CONNECTIONS: beyond it a new connection is closed at once (lowered to fit the open-file limit). */
  readonly maxConnections: number;
  /** Production uses GRPC_LIMITS; tests shorten its time-outs. */
  readonly limits?: Partial<GrpcLimits>;
  /** GRPC_TLS_*: TLS (and a client certificate, with a CA) on the port; undefined: plaintext. */
  readonly tls?: GrpcTlsFiles | undefined;
  /** An incomplete request was ended to keep within incompleteRequestBytesBudget (a metric counts them). */
  readonly onIncompleteRequestReset?: () => void;
}

/** A server that binds no port: a pool worker's, whose primary accepts on the port and hands it each connection. */
export type HandedConnectionsOptions = Omit<GrpcServerOptions, 'bindAddress' | 'port'>;

/** What every Check server offers, whether it listens itself or is handed its connections. */
export interface GrpcCheckServer {
  /** Bytes held now by requests that have begun but not all arrived, over every connection. */
  readonly incompleteRequestBytes: number;
  /** Takes a connection accepted elsewhere: the same cap, time-outs and TLS as one it accepted itself. */
  accept(socket: Socket): void;
  /** Health for '' and the Authorization service: SERVING once the service can decide. */
  setServing(serving: boolean): void;
  /**
   * Health NOT_SERVING, stop accepting, let in-flight checks finish; after graceMs, cut what is
   * left (health Watch streams never finish by themselves). Resolves once the server is closed.
   */
  shutdown(graceMs: number): Promise<void>;
}

export interface AuthzGrpcServer extends GrpcCheckServer {
  /** The port actually bound. */
  readonly port: number;
}

function hostPort(bindAddress: string, port: number): string {
  return bindAddress.includes(':') ? `[${bindAddress}]:${port}` : `${bindAddress}:${port}`;
}

/** At most one warning a minute about connections refused at the cap. */
const REFUSED_WARNING_INTERVAL_MS = 60_000;

/** Open connections, in the order they were accepted, each with when (performance.now()). */
type Connections = Map<Socket, number>;

/** Closes the oldest connection that has sent no preface within graceMs of its accept; false if none has. */
function closeOldestSilent(connections: Connections, graceMs: number): boolean {
  const acceptedBy = performance.now() - graceMs;
  for (const [socket, acceptedAt] of connections) {
    if (acceptedAt > acceptedBy) return false;
    if (socket.bytesRead >= CLIENT_PREFACE_BYTES) continue;
    // Out of the count at once: the next newcomer of a burst must find another.
    connections.delete(socket);
    socket.destroy();
    return true;
  }
  return false;
}

/** Where connections enter grpc-js, however they were accepted: the cap, the handshake time-out, TLS. */
interface ConnectionGate {
  readonly connections: Connections;
  accept(socket: Socket): void;
  /** From now on a newcomer is closed at once: the server is shutting down. */
  close(): void;
}

/**
 * Hands each connection to grpc-js (its connection injector): grpc-js's bindAsync offers neither a cap
 * on connections nor a handshake time-out.
 */
function connectionGate(server: Server, limits: GrpcLimits, maxConnections: number, credentials: ServerCredentials, logger: Logger): ConnectionGate {
  // With TLS credentials grpc-js puts a TLS server between the socket and HTTP/2: a client that does
  // not complete a TLS handshake (plaintext, no or an unknown client certificate) gets no session.
  const injector = server.createConnectionInjector(credentials);
  const connections: Connections = new Map();
  let open = true;
  let refusedSinceWarning = 0;
  let silentClosedSinceWarning = 0;
  const refusedWarning = new RateLimit(REFUSED_WARNING_INTERVAL_MS, () => performance.now());
  const warnAtCap = () => {
    if (!refusedWarning.open()) return;
    logger.warn(
      { refused: refusedSinceWarning, silentClosed: silentClosedSinceWarning, maxConnections },
      'gRPC connections at GRPC_MAX_CONNECTIONS: newcomers refused, or let in by closing connections that sent nothing',
    );
    refusedSinceWarning = 0;
    silentClosedSinceWarning = 0;
  };
  return {
    connections,
    accept(socket) {
      if (!open) {
        socket.destroy();
        return;
      }
      if (connections.size >= maxConnections) {
        if (!closeOldestSilent(connections, limits.silentConnectionGraceMs)) {
          socket.destroy();
          refusedSinceWarning += 1;
          warnAtCap();
          return;
        }
        silentClosedSinceWarning += 1;
        warnAtCap();
      }
      connections.set(socket, performance.now());
      socket.once('close', () => connections.delete(socket));
      dropUnlessHandshakeWithin(socket, limits.handshakeTimeoutMs);
      injector.injectConnection(socket);
    },
    close() {
      open = false;
    },
  };
}

/** Where the gRPC port is bound. */
export type GrpcListenAddress = Pick<GrpcServerOptions, 'bindAddress' | 'port' | 'logger'>;

/**
 * A TCP listener on the gRPC port, resolved once bound; its error names the address. `pauseOnConnect`
 * for a process that reads nothing of a connection but hands it on (a pool's primary).
 */
export async function listenForGrpc(accept: (socket: Socket) => void, where: GrpcListenAddress, pauseOnConnect = false): Promise<TcpServer> {
  const listener = createTcpServer({ pauseOnConnect }, accept);
  const address = hostPort(where.bindAddress, where.port);
  await new Promise<void>((resolveListen, reject) => {
    const refuse = (error: Error) => reject(new Error(`cannot listen for gRPC on ${address}: ${error.message}`, { cause: error }));
    listener.once('error', refuse);
    listener.listen(where.port, where.bindAddress, () => {
      listener.off('error', refuse);
      resolveListen();
    });
  });
  // Once listening, an error is a failed accept: worth a line, not an exit.
  listener.on('error', (error) => where.logger.warn({ err: error }, 'gRPC listener could not accept a connection'));
  return listener;
}

/** The address a listener is bound to, as log lines give it. */
export function boundAddress(listener: TcpServer): string {
  const { address, port } = listener.address() as AddressInfo;
  return hostPort(address, port);
}

/** A Check server (Authorization + Health) with its gate, not yet taking connections. */
function openGrpcServer(options: HandedConnectionsOptions) {
  const { logger } = options;
  const limits: GrpcLimits = { ...GRPC_LIMITS, ...options.limits };
  // grpc-js writes its own plain-text lines to stderr; keep every line of ours JSON.
  setGrpcLogger({ error: (...args: unknown[]) => logger.warn({ source: 'grpc-js' }, format(...args)) });
  // Read first: a missing or bad file stops start-up with one line naming it.
  const tls = options.tls && grpcTlsCredentials(options.tls, { checkIntervalMs: limits.tlsFileCheckMs, handshakeTimeoutMs: limits.handshakeTimeoutMs, logger });
  const largestMessageBytes = options.maxBodyBytes + limits.messageHeadroomBytes;
  const budget = new IncompleteRequestBudget(Math.max(limits.incompleteRequestBytesBudget, largestMessageBytes), options.onIncompleteRequestReset ?? (() => undefined));
  const server = new Server(grpcServerOptions(limits, options.maxBodyBytes, budget));
  // Envoy and probes must not route checks here before credential data is loaded.
  const health = new HealthImplementation(
    Object.fromEntries(HEALTH_SERVICE_NAMES.map((name) => [name, 'NOT_SERVING' satisfies ServingStatus])),
  );
  health.addToServer(server);
  const readRequest = checkRequestReader(namesReadBy(options.authorization.clientIpSource));
  server.addService(authorizationServiceReading(readRequest), createAuthorizationService(options.authorization));

  const { maxConnections, openFileLimit } = processConnectionCap(options.maxConnections, limits.reservedFileDescriptors);
  if (maxConnections < options.maxConnections) {
    logger.warn(
      { configured: options.maxConnections, maxConnections, openFileLimit },
      'GRPC_MAX_CONNECTIONS lowered to leave file descriptors for /readyz and the database; raise the open-file limit (ulimit -n) to allow more',
    );
  }
  const gate = connectionGate(server, limits, maxConnections, tls?.credentials ?? ServerCredentials.createInsecure(), logger);

  const setServing = (serving: boolean): void => {
    const status: ServingStatus = serving ? 'SERVING' : 'NOT_SERVING';
    for (const name of HEALTH_SERVICE_NAMES) health.setStatus(name, status);
  };

  /** `stopListening`: what else stops new connections (a listener of its own). */
  const checkServer = (stopListening: () => void): GrpcCheckServer => {
    let closed: Promise<void> | undefined;
    const shutdown = (graceMs: number): Promise<void> => {
      closed ??= new Promise<void>((resolveClosed) => {
        setServing(false);
        tls?.stop();
        stopListening();
        gate.close();
        const timer = setTimeout(() => {
          logger.warn({ graceMs }, 'gRPC calls still open after the shutdown grace period; closing them');
          server.forceShutdown();
          for (const connection of gate.connections.keys()) connection.destroy();
          resolveClosed();
        }, graceMs);
        timer.unref();
        server.tryShutdown((error) => {
          if (error) logger.warn({ err: error }, 'gRPC server shutdown reported an error');
          // On Node 26 grpc-js reports the shutdown done while a call whose request is incomplete is
          // still open: done is when the last connection has closed, or the grace has ended.
          const drained = setInterval(() => {
            if (gate.connections.size > 0) return;
            clearInterval(drained);
            clearTimeout(timer);
            resolveClosed();
          }, DRAIN_POLL_MS);
        });
      });
      return closed;
    };
    return {
      get incompleteRequestBytes() {
        return budget.held;
      },
      accept: gate.accept,
      setServing,
      shutdown,
    };
  };

  const abandon = (): void => {
    tls?.stop();
    server.forceShutdown();
  };
  return { accept: gate.accept, checkServer, abandon, maxConnections, tls: tls !== undefined };
}

/** Starts the ext_authz gRPC server (Authorization + Health) and resolves once it listens. */
export async function startGrpcServer(options: GrpcServerOptions): Promise<AuthzGrpcServer> {
  const opened = openGrpcServer(options);
  let listener: TcpServer;
  try {
    listener = await listenForGrpc(opened.accept, options);
  } catch (error) {
    opened.abandon();
    throw error;
  }
  const checkServer = opened.checkServer(() => listener.close());
  const port = (listener.address() as AddressInfo).port;
  options.logger.info({ address: boundAddress(listener), maxConnections: opened.maxConnections, tls: opened.tls }, 'gRPC server listening (ext_authz Check and health)');
  return Object.assign(checkServer, { port });
}

/** The same server without a port of its own: a pool worker's, taking the connections its primary hands it (accept). */
export function startHandedConnectionsGrpcServer(options: HandedConnectionsOptions): GrpcCheckServer {
  const opened = openGrpcServer(options);
  options.logger.info({ maxConnections: opened.maxConnections, tls: opened.tls }, 'gRPC server taking the connections the primary hands over (ext_authz Check and health)');
  return opened.checkServer(() => undefined);
}
