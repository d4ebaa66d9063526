import { IPV4_MAPPED, parseClientIp, type ClientIp } from './client-ip.js';
import { NetworkList, packedIncludes, type PackedNetworks } from './network-list.js';

/** `ipv4` networks admit IPv4 clients only. */
interface AllowlistNetwork {
  readonly address: string;
  readonly family: ClientIp['family'];
  readonly prefix: number;
}

/** An IPv4-mapped network as the IPv4 network it maps; undefined for no address or one beyond the mapped range. */
export function allowlistNetwork(address: string, prefix: number): AllowlistNetwork | undefined {
  const ip = parseClientIp(address);
  if (ip === undefined) return undefined;
  const mapped = ip.family === 'ipv4' && address.includes(':');
  if (!mapped) return { address: ip.address, family: ip.family, prefix };
  if (prefix < IPV4_MAPPED.prefix) return undefined;
  return { address: ip.address, family: 'ipv4', prefix: prefix - IPV4_MAPPED.prefix };
}

/** A snapshot holds one per site: one object and, per family with networks, one string. */
export class Allowlist {
  constructor(
    private readonly ipv4: PackedNetworks,
    private readonly ipv6: PackedNetworks,
  ) {}

  /** An IPv4 client matches IPv4 networks only, never an IPv6 one covering ::ffff:0:0/96 as a BlockList would. */
  check(address: string, family: 'ipv4' | 'ipv6'): boolean {
    return packedIncludes(family === 'ipv4' ? this.ipv4 : this.ipv6, family, address);
  }

  /** For a store outside V8's heap. */
  get packed(): PackedAllowlist {
    return { ipv4: this.ipv4, ipv6: this.ipv6 };
  }
}

export interface PackedAllowlist {
  readonly ipv4: PackedNetworks;
  readonly ipv6: PackedNetworks;
}

export function unpackAllowlist({ ipv4, ipv6 }: PackedAllowlist): Allowlist {
  return new Allowlist(ipv4, ipv6);
}

/** From network and prefix as PostgreSQL's host() and masklen() give them. */
export function buildAllowlist(
  entries: Iterable<{ readonly network: string; readonly prefix: number }>,
  onUnusable: (entry: { readonly network: string; readonly prefix: number }) => void = () => undefined,
): Allowlist {
  const ipv4 = new NetworkList('ipv4');
  const ipv6 = new NetworkList('ipv6');
  for (const entry of entries) {
    const network = allowlistNetwork(entry.network, entry.prefix);
    if (network === undefined) onUnusable(entry);
    else (network.family === 'ipv4' ? ipv4 : ipv6).add(network.address, network.prefix);
  }
  return new Allowlist(ipv4.packed(), ipv6.packed());
}
