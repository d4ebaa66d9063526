import * as http2 from 'node:http2';
import type { ClientHttp2Session } from 'node:http2';

/** What an open-loop run saw: latencies in ms from each request's intended send time to its answer. */
export interface OpenLoopRun {
  readonly ratePerSecond: number;
  readonly seconds: number;
  readonly sent: number;
  /** Answered with a CheckResponse; the rest failed (an RPC error or the 10 s deadline). */
  readonly answered: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly maxMs: number;
}

const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';
const DEADLINE_MS = 10_000;
const REQUEST_HEADERS = {
  ':method': 'POST',
  ':path': CHECK_PATH,
  'content-type': 'application/grpc',
  te: 'trailers',
  'grpc-timeout': `${DEADLINE_MS}m`,
};

/** The value below which `share` of the sorted values lie (nearest rank). */
export function percentile(sorted: Float64Array, share: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))]!;
}

/** A gRPC message as it goes on the wire: uncompressed, its length, then its bytes. */
function grpcFrame(message: Buffer): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return frame;
}

function connect(port: number): Promise<ClientHttp2Session> {
  return new Promise((ready, fail) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.once('connect', () => ready(session));
    session.once('error', fail);
  });
}

/**
 * An open-loop load: `ratePerSecond` Checks (the encoded CheckRequest `message`) at fixed intervals for
 * `seconds`, spread over `connections` HTTP/2 connections, whatever the answers. Each latency counts
 * from the moment its request was due, not from when it went out: if the server (or this client)
 * falls behind, the queueing shows in the figures instead of slowing the load (coordinated
 * omission, which a closed loop such as h2load's rate mode hides). The client is node:http2 with the
 * request framed once, not a gRPC library: it shares the cores with the server, so it must cost little.
 */
export async function openLoop(port: number, message: Buffer, ratePerSecond: number, seconds: number, connections = 4): Promise<OpenLoopRun> {
  const sessions = await Promise.all(Array.from({ length: connections }, () => connect(port)));
  const frame = grpcFrame(message);
  const total = Math.max(1, Math.round(ratePerSecond * seconds));
  const intervalMs = 1000 / ratePerSecond;
  const latencies = new Float64Array(total);
  let answered = 0;
  let settled = 0;
  try {
    const allSettled = new Promise<void>((resolveAll) => {
      const startMs = performance.now();
      let next = 0;
      const send = (index: number): void => {
        const dueMs = startMs + index * intervalMs;
        let status: unknown;
        const stream = sessions[index % connections]!.request(REQUEST_HEADERS);
        // grpc-status comes in the trailers, or in the headers of a trailers-only answer.
        stream.once('response', (headers) => (status = headers['grpc-status']));
        stream.once('trailers', (trailers) => (status = trailers['grpc-status']));
        stream.setTimeout(DEADLINE_MS, () => stream.close(http2.constants.NGHTTP2_CANCEL));
        stream.on('error', () => undefined);
        stream.once('close', () => {
          if (status === '0') latencies[answered++] = performance.now() - dueMs;
          if (++settled === total) resolveAll();
        });
        stream.resume();
        stream.end(frame);
      };
      const tick = (): void => {
        const now = performance.now();
        // Everything that is due goes out now, however late: the schedule never waits for answers.
        while (next < total && startMs + next * intervalMs <= now) send(next++);
        if (next < total) setTimeout(tick, Math.max(0, startMs + next * intervalMs - performance.now()));
      };
      tick();
    });
    await allSettled;
  } finally {
    for (const session of sessions) session.close();
  }
  const sorted = latencies.subarray(0, answered).sort();
  return {
    ratePerSecond,
    seconds,
    sent: total,
    answered,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    p999Ms: percentile(sorted, 0.999),
    maxMs: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1]!,
  };
}
