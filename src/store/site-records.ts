import { unpackAllowlist } from '../allowlist/allowlist.js';
import type { ClientId, SiteCredentials, SiteId } from '../decision/types.js';
import { siteKeys, type HashedKey } from './site-keys.js';
import { doubled, SiteIdIndex } from './site-id-index.js';

/** A larger record gets a chunk of its own. */
const CHUNK_BYTES = 2 ** 20;
/** A chunk other than the one being written is compacted once less than this share of it is live. */
const COMPACT_BELOW_LIVE = 0.25;
export const DECODED_SITES_MAX = 4_096;

// A record: length, flags, two times, key and client counts, then strings (UTF-16, so any text survives): site id,
// the allowlist's two, per key its hash (32 bytes when lower-case hex), id and expiry, per client its id and time.
const LENGTH = 0;
const FLAGS = 4;
const GRACE_UNTIL = 8;
const TOKENS_NOT_BEFORE = 16;
const KEY_COUNT = 24;
const CLIENT_COUNT = 28;
const STRINGS = 32;
const ENABLED = 1;
const BOTH_METHODS = 2;
const HEX_HASH = /^[0-9a-f]{64}$/;
const HASH_BYTES = 32;
const HASH_AS_BYTES = 1;
const HASH_AS_STRING = 0;
/** The ref of an entry whose record is not written: the site is unknown. */
const NO_RECORD = -1;

const NO_CLIENTS: ReadonlyMap<ClientId, number> = new Map();

function stringBytes(text: string): number {
  return 4 + 2 * text.length;
}

interface RecordedKey extends HashedKey {
  readonly hashAsBytes: boolean;
}

function hashBytes(key: RecordedKey): number {
  return 1 + (key.hashAsBytes ? HASH_BYTES : stringBytes(key.hash));
}

class RecordReader {
  constructor(
    private readonly chunk: Buffer,
    private at: number,
  ) {}

  string(): string {
    const units = this.chunk.readUInt32LE(this.at);
    const start = this.at + 4;
    this.at = start + 2 * units;
    return this.chunk.toString('utf16le', start, this.at);
  }

  hash(): string {
    const form = this.chunk.readUInt8(this.at);
    this.at += 1;
    if (form === HASH_AS_STRING) return this.string();
    this.at += HASH_BYTES;
    return this.chunk.toString('hex', this.at - HASH_BYTES, this.at);
  }

  time(): number | null {
    const value = this.chunk.readDoubleLE(this.at);
    this.at += 8;
    return Number.isNaN(value) ? null : value;
  }
}

/**
 * Each site a record in Buffer chunks outside V8's heap: as objects, 100,000 sites were ~60 MB for every full
 * collection, whose pauses stalled checks by 40-70 ms. Mostly dead chunks are compacted.
 */
export class SiteRecords {
  private readonly index = new SiteIdIndex();
  /** Per entry: chunk * CHUNK_BYTES + offset, or NO_RECORD. */
  private refs = new Float64Array(64).fill(NO_RECORD);
  private readonly chunks: Array<Buffer | undefined> = [];
  private readonly chunkLive: number[] = [];
  private readonly chunkEnd: number[] = [];
  private readonly freeChunks: number[] = [];
  private writing = -1;
  /** Two generations: the newer full, the older is dropped (evicting a Map's first entry walks past old holes). */
  private recentlyDecoded = new Map<SiteId, SiteCredentials>();
  private earlierDecoded = new Map<SiteId, SiteCredentials>();
  private keyTotal = 0;

  get size(): number {
    return this.index.size;
  }

  get activeKeys(): number {
    return this.keyTotal;
  }

  has(siteId: SiteId): boolean {
    return this.index.entryOf(siteId) >= 0;
  }

  get(siteId: SiteId): SiteCredentials | undefined {
    const recent = this.recentlyDecoded.get(siteId);
    if (recent !== undefined) return recent;
    let site = this.earlierDecoded.get(siteId);
    if (site === undefined) {
      site = this.read(siteId);
      if (site === undefined) return undefined;
    }
    if (this.recentlyDecoded.size >= DECODED_SITES_MAX / 2) {
      this.earlierDecoded = this.recentlyDecoded;
      this.recentlyDecoded = new Map();
    }
    this.recentlyDecoded.set(siteId, site);
    return site;
  }

  /** NO_RECORD for a site unknown, or left unknown by a write that failed half-way. */
  private refOf(siteId: SiteId): number {
    const entry = this.index.entryOf(siteId);
    return entry < 0 ? NO_RECORD : this.refs[entry]!;
  }

  private read(siteId: SiteId): SiteCredentials | undefined {
    const ref = this.refOf(siteId);
    return ref === NO_RECORD ? undefined : this.decode(ref);
  }

  /** Decoded only when the site has some. */
  tokenClientsOf(siteId: SiteId): ReadonlyMap<ClientId, number> {
    const ref = this.refOf(siteId);
    if (ref === NO_RECORD) return NO_CLIENTS;
    return this.chunkOf(ref).readUInt32LE((ref % CHUNK_BYTES) + CLIENT_COUNT) === 0 ? NO_CLIENTS : this.decode(ref).tokenClients;
  }

  set(siteId: SiteId, site: SiteCredentials): void {
    const entry = this.replace(siteId);
    this.keyTotal += site.keysByHash.size;
    const allowlist = site.allowlist.packed;
    const keys: RecordedKey[] = [];
    for (const hash of site.keysByHash.keys()) keys.push({ hash, hashAsBytes: HEX_HASH.test(hash), ...site.keysByHash.get(hash)! });
    let bytes = STRINGS + stringBytes(siteId) + stringBytes(allowlist.ipv4) + stringBytes(allowlist.ipv6);
    for (const key of keys) bytes += hashBytes(key) + stringBytes(key.keyId) + 8;
    for (const client of site.tokenClients.keys()) bytes += stringBytes(client) + 8;
    const ref = this.reserve(bytes);
    const chunk = this.chunkOf(ref);
    let at = ref % CHUNK_BYTES;
    chunk.writeUInt32LE(bytes, at + LENGTH);
    chunk.writeUInt8((site.enabled ? ENABLED : 0) | (site.authMethod === 'both' ? BOTH_METHODS : 0), at + FLAGS);
    chunk.writeDoubleLE(site.graceUntil ?? Number.NaN, at + GRACE_UNTIL);
    chunk.writeDoubleLE(site.tokensNotBefore ?? Number.NaN, at + TOKENS_NOT_BEFORE);
    chunk.writeUInt32LE(keys.length, at + KEY_COUNT);
    chunk.writeUInt32LE(site.tokenClients.size, at + CLIENT_COUNT);
    at += STRINGS;
    const writeString = (text: string) => {
      at = chunk.writeUInt32LE(text.length, at);
      at += chunk.write(text, at, 'utf16le');
    };
    writeString(siteId);
    writeString(allowlist.ipv4);
    writeString(allowlist.ipv6);
    for (const key of keys) {
      if (key.hashAsBytes) {
        at = chunk.writeUInt8(HASH_AS_BYTES, at);
        at += chunk.write(key.hash, at, 'hex');
      } else {
        at = chunk.writeUInt8(HASH_AS_STRING, at);
        writeString(key.hash);
      }
      writeString(key.keyId);
      at = chunk.writeDoubleLE(key.expiresAt ?? Number.NaN, at);
    }
    for (const [client, registeredAt] of site.tokenClients) {
      writeString(client);
      at = chunk.writeDoubleLE(registeredAt, at);
    }
    this.refs[entry] = ref;
  }

  /** The site's record copied from `source`, nothing decoded; false when `source` has none. */
  copyFrom(source: SiteRecords, siteId: SiteId): boolean {
    const sourceRef = source.refOf(siteId);
    if (sourceRef === NO_RECORD) return false;
    const sourceChunk = source.chunkOf(sourceRef);
    const sourceAt = sourceRef % CHUNK_BYTES;
    const bytes = sourceChunk.readUInt32LE(sourceAt + LENGTH);
    const entry = this.replace(siteId);
    this.keyTotal += sourceChunk.readUInt32LE(sourceAt + KEY_COUNT);
    const ref = this.reserve(bytes);
    sourceChunk.copy(this.chunkOf(ref), ref % CHUNK_BYTES, sourceAt, sourceAt + bytes);
    this.refs[entry] = ref;
    return true;
  }

  delete(siteId: SiteId): boolean {
    if (this.index.entryOf(siteId) < 0) return false;
    this.release(siteId);
    this.index.remove(siteId);
    return true;
  }

  keys(): IterableIterator<SiteId> {
    return this.index.siteIds();
  }

  /** Live or dead. */
  get bytesHeld(): number {
    let bytes = 0;
    for (const chunk of this.chunks) bytes += chunk?.length ?? 0;
    return bytes;
  }

  private replace(siteId: SiteId): number {
    this.release(siteId);
    const entry = this.index.add(siteId);
    if (entry >= this.refs.length) this.refs = doubled(this.refs, NO_RECORD);
    // A new entry may be one another site had: until the record is written, it has none (a compaction in
    // between must not take another site's record at that ref for its own).
    this.refs[entry] = NO_RECORD;
    return entry;
  }

  /** Its record dead, its decoded form dropped; its entry stays. */
  private release(siteId: SiteId): void {
    this.recentlyDecoded.delete(siteId);
    this.earlierDecoded.delete(siteId);
    const entry = this.index.entryOf(siteId);
    if (entry < 0) return;
    const ref = this.refs[entry]!;
    if (ref === NO_RECORD) return;
    const chunkIndex = Math.floor(ref / CHUNK_BYTES);
    const chunk = this.chunks[chunkIndex]!;
    this.keyTotal -= chunk.readUInt32LE((ref % CHUNK_BYTES) + KEY_COUNT);
    this.chunkLive[chunkIndex]! -= chunk.readUInt32LE((ref % CHUNK_BYTES) + LENGTH);
    this.refs[entry] = NO_RECORD;
    if (chunkIndex !== this.writing && this.chunkLive[chunkIndex]! < chunk.length * COMPACT_BELOW_LIVE) this.compact(chunkIndex);
  }

  private reserve(bytes: number): number {
    if (bytes > CHUNK_BYTES) return this.ownChunk(bytes);
    if (this.writing < 0 || this.chunkEnd[this.writing]! + bytes > CHUNK_BYTES) {
      const full = this.writing;
      this.writing = this.newChunk(CHUNK_BYTES);
      if (full >= 0 && this.chunkLive[full]! < CHUNK_BYTES * COMPACT_BELOW_LIVE) this.compact(full);
      // What the compaction moved in may leave too little room: the chunk stays the one written next.
      if (this.chunkEnd[this.writing]! + bytes > CHUNK_BYTES) return this.ownChunk(bytes);
    }
    const at = this.chunkEnd[this.writing]!;
    this.chunkEnd[this.writing] = at + bytes;
    this.chunkLive[this.writing]! += bytes;
    return this.writing * CHUNK_BYTES + at;
  }

  private ownChunk(bytes: number): number {
    const own = this.newChunk(bytes);
    this.chunkEnd[own] = bytes;
    this.chunkLive[own] = bytes;
    return own * CHUNK_BYTES;
  }

  private newChunk(bytes: number): number {
    const chunkIndex = this.freeChunks.pop() ?? this.chunks.length;
    this.chunks[chunkIndex] = Buffer.alloc(bytes);
    this.chunkLive[chunkIndex] = 0;
    this.chunkEnd[chunkIndex] = 0;
    return chunkIndex;
  }

  private compact(chunkIndex: number): void {
    const chunk = this.chunks[chunkIndex]!;
    this.chunks[chunkIndex] = undefined;
    for (let at = 0; at < this.chunkEnd[chunkIndex]!; ) {
      const bytes = chunk.readUInt32LE(at + LENGTH);
      const entry = this.index.entryOf(new RecordReader(chunk, at + STRINGS).string());
      if (entry >= 0 && this.refs[entry] === chunkIndex * CHUNK_BYTES + at) {
        this.chunkLive[chunkIndex]! -= bytes;
        const ref = this.reserve(bytes);
        chunk.copy(this.chunkOf(ref), ref % CHUNK_BYTES, at, at + bytes);
        this.refs[entry] = ref;
      }
      at += bytes;
    }
    this.freeChunks.push(chunkIndex);
  }

  private chunkOf(ref: number): Buffer {
    return this.chunks[Math.floor(ref / CHUNK_BYTES)]!;
  }

  private decode(ref: number): SiteCredentials {
    const chunk = this.chunkOf(ref);
    const at = ref % CHUNK_BYTES;
    const flags = chunk.readUInt8(at + FLAGS);
    const keyCount = chunk.readUInt32LE(at + KEY_COUNT);
    const clientCount = chunk.readUInt32LE(at + CLIENT_COUNT);
    const reader = new RecordReader(chunk, at + GRACE_UNTIL);
    const graceUntil = reader.time();
    const tokensNotBefore = reader.time();
    const fields = new RecordReader(chunk, at + STRINGS);
    const siteId = fields.string();
    const allowlist = unpackAllowlist({ ipv4: fields.string(), ipv6: fields.string() });
    const keys: HashedKey[] = [];
    for (let key = 0; key < keyCount; key++) keys.push({ hash: fields.hash(), keyId: fields.string(), expiresAt: fields.time() });
    const tokenClients = new Map<ClientId, number>();
    for (let client = 0; client < clientCount; client++) tokenClients.set(fields.string(), fields.time() ?? Number.POSITIVE_INFINITY);
    return {
      siteId,
      enabled: (flags & ENABLED) !== 0,
      graceUntil,
      keysByHash: siteKeys(keys),
      allowlist,
      authMethod: (flags & BOTH_METHODS) !== 0 ? 'both' : 'tokens',
      tokensNotBefore,
      tokenClients: clientCount === 0 ? NO_CLIENTS : tokenClients,
    };
  }
}
