import { isIP } from 'node:net';

export interface ClientIp {
  /** Dotted IPv4 (also for IPv4-mapped IPv6), or compressed lower-case IPv6. */
  readonly address: string;
  readonly family: 'ipv4' | 'ipv6';
}

/** ::ffff:0:0/96 (RFC 4291 §2.5.5.2): the network ::ffff:a.b.c.d/n is the IPv4 network a.b.c.d/(n − 96). */
export const IPV4_MAPPED = { network: '::ffff:0:0', prefix: 96 } as const;

// An address in IPV4_MAPPED as the URL parser writes it: the IPv4 address in two hex groups.
const MAPPED_IPV4 = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

function canonicalIpv6(text: string): string | undefined {
  try {
    // Node's built-in IPv6 canonicaliser (it writes mapped IPv4 in hex).
    return new URL(`http://[${text}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
}

/** `::ffff:a.b.c.d` counts as the IPv4 address a.b.c.d (RFC 4291 §2.5.5.2: the mapped range is IPv4). */
export function parseClientIp(text: string | undefined): ClientIp | undefined {
  if (text === undefined) return undefined;
  const family = isIP(text);
  if (family === 4) return { address: text, family: 'ipv4' };
  if (family !== 6 || text.includes('%')) return undefined;
  const canonical = canonicalIpv6(text);
  if (canonical === undefined) return undefined;
  const mapped = MAPPED_IPV4.exec(canonical);
  if (mapped) {
    const high = parseInt(mapped[1] ?? '0', 16);
    const low = parseInt(mapped[2] ?? '0', 16);
    return { address: `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`, family: 'ipv4' };
  }
  return { address: canonical, family: 'ipv6' };
}

/** Counted from the right as Envoy's xff_num_trusted_hops; too few entries: undefined, never a client's own. */
export function forwardedForEntry(value: string | undefined, trustedHops: number): string | undefined {
  if (value === undefined) return undefined;
  const entries = value.split(',');
  const entry = entries[entries.length - 1 - trustedHops]?.replace(/^[ \t]+|[ \t]+$/g, '');
  return entry === undefined || entry === '' ? undefined : entry;
}
