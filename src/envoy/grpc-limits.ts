import { readFileSync } from 'node:fs';
import type { ServerOptions } from '@grpc/grpc-js';
import { endIncompleteRequests, unlimitedBudget, type IncompleteRequestBudget } from './incomplete-requests.js';

/**
 * Every limit of the gRPC port, stated once (docs/operations.md, "Limits", names the Envoy setting each must agree
 * with). Envoy keeps a few long-lived HTTP/2 connections to ext_authz and sends each CheckRequest whole,
 * at once; a client that comes near these limits is holding resources, not asking for checks.
 */
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
