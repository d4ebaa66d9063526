import { RateLimit } from '../common/rate-limit.js';
import type { Server, ServerCredentials } from '@grpc/grpc-js';
import type { Socket } from 'node:net';
import type { Logger } from '../observe/logger.js';
import type { GrpcLimits } from './grpc-limits.js';

/** What a client sends first: the connection preface (24 bytes) and its SETTINGS frame header (9), RFC 9113 §3.4. */
const CLIENT_PREFACE_BYTES = 24 + 9;

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

const REFUSED_WARNING_INTERVAL_MS = 60_000;

/** Open connections, in the order they were accepted, each with its performance.now() then. */
type Connections = Map<Socket, number>;

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

/** grpc-js's bindAsync offers no connection cap nor handshake time-out: every connection enters through here. */
export function connectionGate(server: Server, limits: GrpcLimits, maxConnections: number, credentials: ServerCredentials, logger: Logger) {
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
    accept(socket: Socket): void {
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
    close(): void {
      open = false;
    },
  };
}
