import { IPV4_MAPPED, parseClientIp, type ClientIp } from './client-ip.js';
import { NetworkList, packedIncludes, type PackedNetworks } from './network-list.js';

/**
 * A site's IP allowlist (spec, Authentication 6: whitelisting is mandatory), everything about it in
 * this folder: the client address as it is matched (client-ip), the networks as they are stored and
 * typed (allowlist-entry), and the arithmetic that matches them (network-list).
 */

/** An allowlist network in the family the decision checks clients of: `ipv4` networks admit IPv4 clients only. */
export interface AllowlistNetwork {
  readonly address: string;
  readonly family: ClientIp['family'];
  readonly prefix: number;
}

/**
 * The network `address/prefix` as the allowlist holds it: an IPv4-mapped network is the IPv4 network it
 * maps, like the client addresses in it. Undefined when the address is not one, or when a mapped address
 * has a prefix shorter than IPV4_MAPPED's and so reaches beyond the mapped range.
 */
export function allowlistNetwork(address: string, prefix: number): AllowlistNetwork | undefined {
  const ip = parseClientIp(address);
  if (ip === undefined) return undefined;
  const mapped = ip.family === 'ipv4' && address.includes(':');
  if (!mapped) return { address: ip.address, family: ip.family, prefix };
  if (prefix < IPV4_MAPPED.prefix) return undefined;
  return { address: ip.address, family: 'ipv4', prefix: prefix - IPV4_MAPPED.prefix };
}

/**
 * The networks a site's clients must come from, as buildAllowlist makes them (or unpackAllowlist gives
 * them back): a snapshot holds one per site, one object and, per family with networks, one string.
 */
export class Allowlist {
  constructor(
    private readonly ipv4: PackedNetworks,
    private readonly ipv6: PackedNetworks,
  ) {}

  /**
   * Whether the address is inside one of the networks of its own family: an IPv4 client matches IPv4
   * networks only, never an IPv6 network that covers ::ffff:0:0/96, as a single BlockList would match it.
   */
  check(address: string, family: 'ipv4' | 'ipv6'): boolean {
    return packedIncludes(family === 'ipv4' ? this.ipv4 : this.ipv6, family, address);
  }

  /** As two strings, for a store outside V8's heap (unpackAllowlist gives the allowlist back). */
  get packed(): PackedAllowlist {
    return { ipv4: this.ipv4, ipv6: this.ipv6 };
  }
}

/** An allowlist as two strings. */
export interface PackedAllowlist {
  readonly ipv4: PackedNetworks;
  readonly ipv6: PackedNetworks;
}

/** The allowlist whose `packed` form this is. */
export function unpackAllowlist({ ipv4, ipv6 }: PackedAllowlist): Allowlist {
  return new Allowlist(ipv4, ipv6);
}

/**
 * A site's allowlist from its entries (network and prefix as PostgreSQL's host() and masklen() give
 * them), as the decision reads it: IPv4 networks, an IPv4-mapped one included, admit IPv4 clients
 * only; IPv6 networks admit IPv6 clients only, even one that covers ::ffff:0:0/96.
 * Matched in plain arithmetic, not with a BlockList (see packedIncludes).
 */
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
