import * as grpc from '@grpc/grpc-js';

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
const asBytes = (bytes: Buffer): Buffer => bytes;

/** The value below which `share` of the sorted values lie (nearest rank). */
export function percentile(sorted: Float64Array, share: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))]!;
}

/**
 * An open-loop load: `ratePerSecond` Checks (the encoded CheckRequest `message`) at fixed intervals for
 * `seconds`, spread over `connections` HTTP/2 connections, whatever the answers. Each latency counts
 * from the moment its request was due, not from when it went out: if the server (or this client)
 * falls behind, the queueing shows in the figures instead of slowing the load (coordinated
 * omission, which a closed loop such as h2load's rate mode hides).
 */
export async function openLoop(port: number, message: Buffer, ratePerSecond: number, seconds: number, connections = 4): Promise<OpenLoopRun> {
  const clients = Array.from(
    { length: connections },
    () => new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }),
  );
  const total = Math.max(1, Math.round(ratePerSecond * seconds));
  const intervalMs = 1000 / ratePerSecond;
  const latencies = new Float64Array(total);
  let answered = 0;
  let settled = 0;
  try {
    await Promise.all(clients.map((client) => new Promise<void>((ready, fail) => client.waitForReady(Date.now() + 5_000, (error) => (error ? fail(error) : ready())))));
    const allSettled = new Promise<void>((resolveAll) => {
      const startMs = performance.now();
      let next = 0;
      const send = (index: number): void => {
        const dueMs = startMs + index * intervalMs;
        clients[index % connections]!.makeUnaryRequest(CHECK_PATH, asBytes, asBytes, message, { deadline: Date.now() + DEADLINE_MS }, (error) => {
          if (!error) latencies[answered++] = performance.now() - dueMs;
          if (++settled === total) resolveAll();
        });
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
    for (const client of clients) client.close();
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
