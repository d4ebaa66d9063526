import { Server, ServerCredentials, setLogger as setGrpcLogger, type ChannelOptions } from '@grpc/grpc-js';
import { format } from 'node:util';
import { HealthImplementation, type ServingStatus } from 'grpc-health-check';
import type { Logger } from '../observe/logger.js';
import { createAuthorizationService, type AuthorizationServiceDeps } from './authorization-service.js';
import { AUTHORIZATION_SERVICE, AUTHORIZATION_SERVICE_NAME } from './proto.js';

/** The names grpc.health.v1.Health answers for: the whole server ('') and the ext_authz service. */
export const HEALTH_SERVICE_NAMES: readonly string[] = ['', AUTHORIZATION_SERVICE_NAME];

const MIB = 1024 * 1024;

/**
 * Server options, stated once. A CheckRequest carries the body Envoy buffered (max_request_bytes,
 * often 1 MiB) plus headers, so 8 MiB leaves room. Envoy keeps long-lived HTTP/2 connections to
 * ext_authz: pings find a connection whose peer vanished, and a maximum connection age makes Envoy
 * reconnect now and then, so its load spreads again over replicas started later.
 */
export const GRPC_SERVER_OPTIONS: Readonly<ChannelOptions> = Object.freeze({
  'grpc.max_receive_message_length': 8 * MIB,
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.max_connection_age_ms': 10 * 60_000,
  'grpc.max_connection_age_grace_ms': 30_000,
});

export interface GrpcServerOptions {
  /** An IP address: 0.0.0.0, ::, 127.0.0.1 … */
  readonly bindAddress: string;
  /** 0 picks a free port; see AuthzGrpcServer.port. */
  readonly port: number;
  readonly authorization: AuthorizationServiceDeps;
  readonly logger: Logger;
}

export interface AuthzGrpcServer {
  /** The port actually bound. */
  readonly port: number;
  /** Health for '' and the Authorization service: SERVING once the service can decide. */
  setServing(serving: boolean): void;
  /**
   * Health NOT_SERVING, stop accepting, let in-flight checks finish; after graceMs, cut what is
   * left (health Watch streams never finish by themselves). Resolves once the server is closed.
   */
  shutdown(graceMs: number): Promise<void>;
}

function hostPort(bindAddress: string, port: number): string {
  return bindAddress.includes(':') ? `[${bindAddress}]:${port}` : `${bindAddress}:${port}`;
}

function bind(server: Server, address: string): Promise<number> {
  return new Promise((resolvePort, reject) => {
    server.bindAsync(address, ServerCredentials.createInsecure(), (error, port) => {
      if (error) reject(new Error(`cannot listen for gRPC on ${address}: ${error.message}`, { cause: error }));
      else resolvePort(port);
    });
  });
}

/** Starts the ext_authz gRPC server (Authorization + Health) and resolves once it listens. */
export async function startGrpcServer(options: GrpcServerOptions): Promise<AuthzGrpcServer> {
  const { logger } = options;
  // grpc-js writes its own plain-text lines to stderr; keep every line of ours JSON.
  setGrpcLogger({ error: (...args: unknown[]) => logger.warn({ source: 'grpc-js' }, format(...args)) });
  const server = new Server(GRPC_SERVER_OPTIONS);
  // Envoy and probes must not route checks here before credential data is loaded.
  const health = new HealthImplementation(
    Object.fromEntries(HEALTH_SERVICE_NAMES.map((name) => [name, 'NOT_SERVING' satisfies ServingStatus])),
  );
  health.addToServer(server);
  server.addService(AUTHORIZATION_SERVICE, createAuthorizationService(options.authorization));

  const address = hostPort(options.bindAddress, options.port);
  const port = await bind(server, address);
  logger.info({ address: hostPort(options.bindAddress, port) }, 'gRPC server listening (ext_authz Check and health)');

  const setServing = (serving: boolean): void => {
    const status: ServingStatus = serving ? 'SERVING' : 'NOT_SERVING';
    for (const name of HEALTH_SERVICE_NAMES) health.setStatus(name, status);
  };

  let closed: Promise<void> | undefined;
  const shutdown = (graceMs: number): Promise<void> => {
    closed ??= new Promise<void>((resolveClosed) => {
      setServing(false);
      const timer = setTimeout(() => {
        logger.warn({ graceMs }, 'gRPC calls still open after the shutdown grace period; closing them');
        server.forceShutdown();
        resolveClosed();
      }, graceMs);
      timer.unref();
      server.tryShutdown((error) => {
        clearTimeout(timer);
        if (error) logger.warn({ err: error }, 'gRPC server shutdown reported an error');
        resolveClosed();
      });
    });
    return closed;
  };

  return { port, setServing, shutdown };
}
