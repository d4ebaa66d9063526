import { isIP } from 'node:net';

export interface ClientIp {
  /** Canonical text: dotted IPv4 (also for IPv4-mapped IPv6), or compressed lower-case IPv6. */
  readonly address: string;
  readonly family: 'ipv4' | 'ipv6';
}

const MAPPED_IPV4 = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

function canonicalIpv6(text: string): string | undefined {
  try {
    // The WHATWG URL parser is Node's built-in IPv6 canonicaliser (and writes mapped IPv4 in hex).
    return new URL(`http://[${text}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
}

/**
 * The client address as the allowlist sees it, or undefined when the text is not an IP address.
 * `::ffff:a.b.c.d` counts as the IPv4 address a.b.c.d (issue #3, decision 3).
 */
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
