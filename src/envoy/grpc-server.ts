import { Server, ServerCredentials, setLogger as setGrpcLogger } from '@grpc/grpc-js';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { format } from 'node:util';
import { HealthImplementation, type ServingStatus } from 'grpc-health-check';
import type { Logger } from '../observe/logger.js';
import type { GrpcTlsFiles } from '../config.js';
import { createAuthorizationService, type AuthorizationServiceDeps } from './authorization-service.js';
import { IncompleteRequestBudget } from './incomplete-requests.js';
import { grpcTlsCredentials } from './tls-credentials.js';
import { checkRequestReader } from './check-request-reader.js';
import { AUTHORIZATION_SERVICE_NAME, authorizationServiceReading } from './proto.js';
import { namesReadBy } from './request-view.js';
import { connectionGate } from './connection-gate.js';
import { GRPC_LIMITS, grpcServerOptions, processConnectionCap, type GrpcLimits } from './grpc-limits.js';

export { GRPC_LIMITS, grpcConnectionCap, grpcServerOptions, openFileLimit, processConnectionCap, type GrpcLimits } from './grpc-limits.js';

/** The names grpc.health.v1.Health answers for: the whole server ('') and the ext_authz service. */
export const HEALTH_SERVICE_NAMES: readonly string[] = ['', AUTHORIZATION_SERVICE_NAME];

/** How often a draining server looks whether its last connection has closed. */
const DRAIN_POLL_MS = 50;

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
