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

const HEALTH_SERVICE_NAMES: readonly string[] = ['', AUTHORIZATION_SERVICE_NAME];

const DRAIN_POLL_MS = 50;

export interface GrpcServerOptions {
  readonly bindAddress: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly authorization: AuthorizationServiceDeps;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  readonly maxConnections: number;
  /** Tests shorten GRPC_LIMITS' time-outs. */
  readonly limits?: Partial<GrpcLimits>;
  readonly tls?: GrpcTlsFiles | undefined;
  readonly onIncompleteRequestReset?: () => void;
}

/** A pool worker's server: it binds no port, its primary hands it each connection. */
export type HandedConnectionsOptions = Omit<GrpcServerOptions, 'bindAddress' | 'port'>;

export interface GrpcCheckServer {
  readonly incompleteRequestBytes: number;
  /** A connection accepted elsewhere: the same cap, time-outs and TLS as one accepted here. */
  accept(socket: Socket): void;
  setServing(serving: boolean): void;
  /** Stops accepting and drains; after graceMs cuts what is left (health Watch streams never end by themselves). */
  shutdown(graceMs: number): Promise<void>;
}

export interface AuthzGrpcServer extends GrpcCheckServer {
  readonly port: number;
}

function hostPort(bindAddress: string, port: number): string {
  return bindAddress.includes(':') ? `[${bindAddress}]:${port}` : `${bindAddress}:${port}`;
}

/** A TCP listener on the gRPC port; `pauseOnConnect` for a pool's primary, which reads nothing but hands it on. */
export async function listenForGrpc(
  accept: (socket: Socket) => void,
  where: Pick<GrpcServerOptions, 'bindAddress' | 'port' | 'logger'>,
  pauseOnConnect = false,
): Promise<TcpServer> {
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

export function boundAddress(listener: TcpServer): string {
  const { address, port } = listener.address() as AddressInfo;
  return hostPort(address, port);
}

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

export function startHandedConnectionsGrpcServer(options: HandedConnectionsOptions): GrpcCheckServer {
  const opened = openGrpcServer(options);
  options.logger.info({ maxConnections: opened.maxConnections, tls: opened.tls }, 'gRPC server taking the connections the primary hands over (ext_authz Check and health)');
  return opened.checkServer(() => undefined);
}
