import { allowlistNetwork } from './allowlist.js';
import { IPV4_MAPPED, parseClientIp } from './client-ip.js';
import { readAddress } from './network-list.js';

/** In canonical form, as PostgreSQL's cidr type stores it. */
export interface AllowlistEntry {
  readonly family: 'ipv4' | 'ipv6';
  readonly network: string;
  readonly prefix: number;
  readonly cidr: string;
}

type ParsedAllowlistEntry =
  | { readonly ok: true; readonly entry: AllowlistEntry }
  | { readonly ok: false; readonly reason: string };

const EXAMPLES = 'e.g. 203.0.113.0/24, 203.0.113.7 or 2001:db8::/32';
/** For `--help`. */
export const ALLOWLIST_ENTRY_FORM =
  `an IPv4 or IPv6 network with no bits set after the prefix, or a single address (a /32 or /128), ${EXAMPLES}; ` +
  '::ffff:a.b.c.d/n is the IPv4 network it maps. Several entries are separated by spaces';

const BITS = { ipv4: 32, ipv6: 128 } as const;

/** `address` (text of `family`, as parseClientIp gives it) as one number. */
function addressBits(address: string, family: 'ipv4' | 'ipv6'): bigint {
  const words = new Uint32Array(BITS[family] / 32);
  readAddress(address, family, words);
  return words.reduce((bits, word) => (bits << 32n) | BigInt(word), 0n);
}

function bitsToAddress(bits: bigint, family: 'ipv4' | 'ipv6'): string {
  if (family === 'ipv4') return [24n, 16n, 8n, 0n].map((shift) => String((bits >> shift) & 255n)).join('.');
  const groups = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((shift) => ((bits >> shift) & 0xffffn).toString(16));
  return parseClientIp(groups.join(':'))?.address ?? groups.join(':');
}

/** `::ffff:a.b.c.d/n` is the IPv4 network it maps; host bits must be zero, as PostgreSQL's cidr requires. */
export function parseAllowlistEntry(text: string): ParsedAllowlistEntry {
  // `ip allow 1001 10.0.0.1,10.0.0.2`, as a spreadsheet would write a list.
  const listed = text.split(',').map((part) => part.trim()).filter((part) => part !== '');
  if (text.includes(',') && listed.length > 0) {
    return { ok: false, reason: `"${text}" is not an IP address or CIDR; separate entries with spaces, not commas, e.g. ${listed.join(' ')}` };
  }
  const slash = text.indexOf('/');
  const addressText = slash < 0 ? text : text.slice(0, slash);
  const prefixText = slash < 0 ? undefined : text.slice(slash + 1);
  const ip = parseClientIp(addressText);
  if (ip === undefined) {
    return { ok: false, reason: `"${text}" is not an IP address or CIDR; expected ${EXAMPLES}` };
  }
  const written = addressText.includes(':') ? BITS.ipv6 : BITS.ipv4;
  if (prefixText !== undefined && !/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) {
    return { ok: false, reason: `"${text}" has the prefix length "${prefixText}"; expected a whole number from 0 to ${written}` };
  }
  const writtenPrefix = prefixText === undefined ? written : Number(prefixText);
  if (writtenPrefix > written) {
    return { ok: false, reason: `"${text}" has the prefix length ${writtenPrefix}; it is at most ${written} for this address` };
  }
  const network = allowlistNetwork(addressText, writtenPrefix);
  if (network === undefined) {
    const range = `${IPV4_MAPPED.network}/${IPV4_MAPPED.prefix}`;
    return { ok: false, reason: `"${text}" reaches beyond the IPv4-mapped range ${range}; use a prefix of ${IPV4_MAPPED.prefix} or more, or write the IPv4 network` };
  }
  const { family, prefix } = network;
  const width = BigInt(BITS[family]);
  const hostMask = (1n << (width - BigInt(prefix))) - 1n;
  const bits = addressBits(network.address, family);
  if ((bits & hostMask) !== 0n) {
    const meant = `${bitsToAddress(bits & ~hostMask, family)}/${prefix}`;
    return { ok: false, reason: `"${text}" has bits set after the prefix; did you mean ${meant}, or the single address ${network.address}?` };
  }
  return { ok: true, entry: { family, network: network.address, prefix, cidr: `${network.address}/${prefix}` } };
}

/** E.g. ::/80: it admits no IPv4 client all the same, as IPv4 clients are checked against IPv4 entries only. */
export function coversIpv4Mapped(entry: AllowlistEntry): boolean {
  if (entry.family !== 'ipv6' || entry.prefix > IPV4_MAPPED.prefix) return false;
  const hostBits = BigInt(BITS.ipv6 - entry.prefix);
  return addressBits(entry.network, 'ipv6') >> hostBits === addressBits(IPV4_MAPPED.network, 'ipv6') >> hostBits;
}
