import type { ClientIp } from './client-ip.js';

type Family = ClientIp['family'];

/** 32-bit words of an address, most significant first. */
const WORDS: Readonly<Record<Family, number>> = { ipv4: 1, ipv6: 4 };

const DOT = 0x2e;
const COLON = 0x3a;

function decimalDigit(c: number): number {
  return c >= 0x30 && c <= 0x39 ? c - 0x30 : -1;
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x57 : -1;
}

/** Dotted-quad IPv4 text from `start` to the end, as node's isIP accepts it, into `words[at]`. */
function readIpv4(text: string, start: number, words: Uint32Array, at: number): boolean {
  let value = 0;
  let octets = 0;
  let i = start;
  while (octets < 4) {
    const first = decimalDigit(text.charCodeAt(i));
    if (first < 0) return false;
    let octet = first;
    let digits = 1;
    i++;
    for (let d = decimalDigit(text.charCodeAt(i)); d >= 0; d = decimalDigit(text.charCodeAt(i))) {
      if (first === 0 || ++digits > 3) return false;
      octet = octet * 10 + d;
      i++;
    }
    if (octet > 255) return false;
    value = value * 256 + octet;
    octets++;
    if (octets < 4) {
      if (text.charCodeAt(i) !== DOT) return false;
      i++;
    }
  }
  if (i !== text.length) return false;
  words[at] = value;
  return true;
}

/** Shared: an address is read whole before the next. */
const GROUPS = new Uint16Array(8);
const TAIL = new Uint32Array(1);

/** IPv6 text (RFC 4291 §2.2) into four words; a zone (`%eth0`) is not an address the allowlist can hold. */
function readIpv6(text: string, words: Uint32Array): boolean {
  let count = 0;
  let gap = -1;
  let i = 0;
  if (text.charCodeAt(0) === COLON) {
    if (text.charCodeAt(1) !== COLON) return false;
    gap = 0;
    i = 2;
  }
  while (i < text.length) {
    if (count === 8) return false;
    let end = i;
    while (end < text.length && hexDigit(text.charCodeAt(end)) >= 0) end++;
    if (text.charCodeAt(end) === DOT) {
      // An IPv4 tail takes the place of the last two groups.
      if (count > 6 || !readIpv4(text, i, TAIL, 0)) return false;
      GROUPS[count++] = (TAIL[0] ?? 0) >>> 16;
      GROUPS[count++] = (TAIL[0] ?? 0) & 0xffff;
      break;
    }
    if (end === i || end - i > 4) return false;
    let group = 0;
    for (let j = i; j < end; j++) group = (group << 4) | hexDigit(text.charCodeAt(j));
    GROUPS[count++] = group;
    i = end;
    if (i === text.length) break;
    if (text.charCodeAt(i) !== COLON) return false;
    i++;
    if (text.charCodeAt(i) === COLON) {
      if (gap >= 0) return false;
      gap = count;
      i++;
    } else if (i === text.length) {
      return false;
    }
  }
  if (gap < 0 ? count !== 8 : count > 7) return false;
  if (gap >= 0) {
    // The groups after the `::` move to the end, last first; the gap they leave is zeros.
    const shift = 8 - count;
    for (let g = count - 1; g >= gap; g--) GROUPS[g + shift] = GROUPS[g] ?? 0;
    GROUPS.fill(0, gap, gap + shift);
  }
  for (let w = 0; w < 4; w++) words[w] = (((GROUPS[2 * w] ?? 0) << 16) | (GROUPS[2 * w + 1] ?? 0)) >>> 0;
  return true;
}

export function readAddress(text: string, family: Family, words: Uint32Array): boolean {
  return family === 'ipv4' ? readIpv4(text, 0, words, 0) : readIpv6(text, words);
}

function maskWord(prefix: number, word: number): number {
  const bits = Math.min(32, Math.max(0, prefix - 32 * word));
  return bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
}

/** A check runs to completion, so one buffer serves every list. */
const CLIENT = new Uint32Array(4);

/** Each network's words then its mask's, as UTF-16 pairs: a string holds no references for the collector to mark. */
export type PackedNetworks = string;

function wordAt(networks: PackedNetworks, unit: number): number {
  return ((networks.charCodeAt(unit) << 16) | networks.charCodeAt(unit + 1)) >>> 0;
}

/** A BlockList's answer in plain arithmetic: BlockList.check makes a native SocketAddress on every call. */
export function packedIncludes(networks: PackedNetworks, family: Family, address: string): boolean {
  if (networks.length === 0 || !readAddress(address, family, CLIENT)) return false;
  const words = WORDS[family];
  for (let start = 0; start < networks.length; start += 4 * words) {
    let inside = true;
    for (let w = 0; w < words && inside; w++) {
      inside = ((CLIENT[w] ?? 0) & wordAt(networks, start + 2 * (words + w))) >>> 0 === wordAt(networks, start + 2 * w);
    }
    if (inside) return true;
  }
  return false;
}

/** UTF-16 units per String.fromCharCode call: far below the engine's limit on arguments. */
const PACK_CHUNK = 8_192;

/** Networks of one address family as they are added. */
export class NetworkList {
  /** As PackedNetworks lays them out. */
  private readonly units: number[] = [];

  constructor(private readonly family: Family) {}

  /** Host bits are ignored; false, and nothing added, when the text is not an address of the family. */
  add(address: string, prefix: number): boolean {
    const words = WORDS[this.family];
    if (!(prefix >= 0 && prefix <= 32 * words) || !readAddress(address, this.family, CLIENT)) return false;
    for (let w = 0; w < words; w++) this.pushWord(((CLIENT[w] ?? 0) & maskWord(prefix, w)) >>> 0);
    for (let w = 0; w < words; w++) this.pushWord(maskWord(prefix, w));
    return true;
  }

  private pushWord(word: number): void {
    this.units.push(word >>> 16, word & 0xffff);
  }

  get size(): number {
    return this.units.length / (4 * WORDS[this.family]);
  }

  /** The empty string, which admits nobody, for none. */
  packed(): PackedNetworks {
    const chunks: string[] = [];
    for (let at = 0; at < this.units.length; at += PACK_CHUNK) chunks.push(String.fromCharCode(...this.units.slice(at, at + PACK_CHUNK)));
    return chunks.join('');
  }

  includes(address: string): boolean {
    return packedIncludes(this.packed(), this.family, address);
  }
}
