import type { IncomingMessage } from 'node:http';
import { forwardedForEntry, parseClientIp } from '../allowlist/client-ip.js';
import { connectionSource } from '../common/connection-roster.js';

// Whom the per-address budgets count: the X-Forwarded-For entry XFF_TRUSTED_HOPS from the right (the peer appended);
// fewer entries, or one that is no address, count against the peer, so a client never picks its own bucket.
export function requestSource(request: IncomingMessage, trustedHops: number): string {
  const peer = request.socket?.remoteAddress;
  if (trustedHops === 0 || peer === undefined) return connectionSource(peer);
  const forwarded = request.headers['x-forwarded-for'];
  const chain = forwarded === undefined ? peer : `${Array.isArray(forwarded) ? forwarded.join(', ') : forwarded}, ${peer}`;
  const client = parseClientIp(forwardedForEntry(chain, trustedHops));
  return connectionSource(client === undefined ? peer : client.address);
}
