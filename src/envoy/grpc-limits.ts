import { readFileSync } from 'node:fs';
import type { ServerOptions } from '@grpc/grpc-js';
import { endIncompleteRequests, unlimitedBudget, type IncompleteRequestBudget } from './incomplete-requests.js';

// docs/operations.md, "Limits", names the Envoy setting each must agree with. Envoy keeps a few long-lived
// connections and sends each CheckRequest whole: a client near these is holding resources, not asking for checks.
export const GRPC_LIMITS = Object.freeze({
  // Envoy sends the HTTP/2 preface with the TCP handshake; grpc-js has no such time-out of its own.
  handshakeTimeoutMs: 5_000,
  // At GRPC_MAX_CONNECTIONS a newcomer replaces the oldest connection silent this long, else is refused.
  silentConnectionGraceMs: 250,
  // Envoy's cluster idle_timeout should be shorter, so that Envoy, not a GOAWAY racing a check, ends it.
  idleTimeoutMs: 5 * 60_000,
  // A request not all arrived by then: DEADLINE_EXCEEDED and a reset; grpc-js itself would wait for ever.
  requestTimeoutMs: 10_000,
  // RFC 9113 §6.5.2 recommends no less than 100; Envoy honours it.
  maxConcurrentStreams: 100,
  // Added to MAX_BODY_BYTES for the rest of a CheckRequest: headers (60 KiB by Envoy's default), addresses, metadata.
  messageHeadroomBytes: 256 * 1024,
  // Bytes held by incomplete requests over all connections (100 streams × a whole message each would be
  // ~125 MiB a connection); past it the oldest are reset. Never below one largest message.
  incompleteRequestBytesBudget: 64 * 1024 * 1024,
  // WORKERS > 1: a handed connection not taken by then is let go of by the primary, so it closes, not hangs.
  handoffReceiptTimeoutMs: 5_000,
  // Pings find a peer that vanished without a FIN.
  keepaliveTimeMs: 30_000,
  keepaliveTimeoutMs: 10_000,
  // Envoy reconnects now and then, spreading its load over replicas started later.
  maxConnectionAgeMs: 10 * 60_000,
  maxConnectionAgeGraceMs: 30_000,
  // Descriptors kept free of gRPC connections for probes, /metrics, the database and logs.
  reservedFileDescriptors: 128,
  // kubelet updates a Secret volume within about a minute of cert-manager's renewal.
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

export function processConnectionCap(configured: number, reservedFileDescriptors: number): { maxConnections: number; openFileLimit: number | undefined } {
  let openFiles: number | undefined;
  try {
    openFiles = openFileLimit(readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    // not Linux: GRPC_MAX_CONNECTIONS as configured
  }
  return { maxConnections: grpcConnectionCap(configured, openFiles, reservedFileDescriptors), openFileLimit: openFiles };
}
