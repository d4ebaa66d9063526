import type { IncomingMessage } from 'node:http';
import { forwardedForEntry, parseClientIp } from '../allowlist/client-ip.js';
import { connectionSource } from '../common/connection-roster.js';

/**
 * Whom a request counts against in the admin port's per-address budgets: an IPv4 address or an IPv6
 * /64 (connectionSource). With ADMIN_XFF_TRUSTED_HOPS = 0, the socket's peer. Behind N trusted
 * proxies that each append the address they received the request from to X-Forwarded-For, the peer
 * is the last of them, so the client is the entry N from the right once the peer is appended, as
 * XFF_TRUSTED_HOPS counts for the gRPC port: entries a client wrote itself lie further left and are
 * never read. Fewer entries than that, or one that is no IP address, count against the peer: a client
 * never picks its own bucket. The connection roster counts by the peer, before any header arrives.
 */
export function requestSource(request: IncomingMessage, trustedHops: number): string {
  const peer = request.socket?.remoteAddress;
  if (trustedHops === 0 || peer === undefined) return connectionSource(peer);
  const forwarded = request.headers['x-forwarded-for'];
  const chain = forwarded === undefined ? peer : `${Array.isArray(forwarded) ? forwarded.join(', ') : forwarded}, ${peer}`;
  const client = parseClientIp(forwardedForEntry(chain, trustedHops));
  return connectionSource(client === undefined ? peer : client.address);
}
