import { h2session, openCheckStream } from '../test/support/raw-grpc.js';
import type { Attack } from '../test/support/operator-attacks.js';

/*
 * The attack on the Check port of the abuse benchmark, as an attacker would send it; those on the
 * operator port are in test/support/operator-attacks.ts, which the regression tests share.
 */

/**
 * `connections` HTTP/2 connections to the Check port, each with `streams` calls whose message announces
 * `announcedBytes` and sends `sentBytes` of them, never the rest, never END_STREAM: what a client that
 * stalls mid-request, or an attacker, leaves the server to hold.
 */
export function partialMessages(target: string, connections: number, streams: number, announcedBytes: number, sentBytes: number): Attack {
  const partial = Buffer.alloc(5 + sentBytes, 0x61);
  partial.writeUInt8(0, 0);
  partial.writeUInt32BE(announcedBytes, 1);
  let reset = 0;
  const sessions = Array.from({ length: connections }, () => h2session(target));
  for (const session of sessions) {
    for (let i = 0; i < streams; i++) {
      const stream = openCheckStream(session);
      stream.resume();
      stream.on('close', () => (reset += 1));
      stream.write(partial);
    }
  }
  return {
    describe: () => `${connections} connections × ${streams} calls, each ${(sentBytes / 2 ** 20).toFixed(2)} MiB of a ${(announcedBytes / 2 ** 20).toFixed(2)} MiB message; ${reset} calls ended by serve`,
    stop: () => sessions.forEach((session) => session.destroy()),
  };
}
