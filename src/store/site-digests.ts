import type { SiteId } from '../decision/types.js';
import type { Slices } from '../common/slices.js';
import { SiteIdIndex } from './site-id-index.js';

export interface ResyncDigests {
  readonly bucketDigests: ReadonlyMap<string, string>;
  /** The sites of the buckets whose digest changed. */
  readonly siteDigests: SiteDigestTable;
  /** Sites whose digest differs from the one held, new ones included. */
  readonly changed: { has(siteId: SiteId): boolean };
  readonly removed: readonly SiteId[];
}

/** Sites whose ids share a run of BUCKET_SPAN share a bucket: a resync compares one digest per bucket first. */
export const BUCKET_SPAN = 256;

export interface SiteDigest {
  readonly digest: string;
  readonly bucket: string;
}

const DIGEST_BYTES = 16;

/** Matches no digest, so the next resync reads the site again, and keeps it listed so it also sees it deleted. */
const UNKNOWN_DIGEST = Buffer.alloc(DIGEST_BYTES);

/** Dividing by a power of two is exact, and truncates as PostgreSQL does. */
function bucketNumber(id: number): number {
  return Math.trunc(id / BUCKET_SPAN);
}

/** As PostgreSQL's `id / BUCKET_SPAN` spells it, truncated toward zero. */
export function bucketOf(siteId: SiteId): string {
  const id = Number(siteId);
  // -0 (bucket of -1 to -255) spells "0", as in PostgreSQL.
  if (Number.isSafeInteger(id)) return String(bucketNumber(id));
  return (BigInt(siteId) / BigInt(BUCKET_SPAN)).toString();
}

/** Outside V8's heap: 100,000 digests as strings in Maps were 200,000 objects for every full collection. */
export class SiteDigestTable {
  private readonly index = new SiteIdIndex();
  private digests = Buffer.alloc(64 * DIGEST_BYTES);
  private readonly bucketSizes = new Map<string, number>();
  private readonly scratch = Buffer.alloc(DIGEST_BYTES);

  get size(): number {
    return this.index.size;
  }

  has(siteId: SiteId): boolean {
    return this.index.entryOf(siteId) >= 0;
  }

  /** False when none is known, or `digest` is not an MD5 in hex. */
  matches(siteId: SiteId, digest: string): boolean {
    const entry = this.index.entryOf(siteId);
    if (entry < 0 || this.isUnknown(entry) || !this.readHex(digest)) return false;
    return this.scratch.compare(this.digests, entry * DIGEST_BYTES, (entry + 1) * DIGEST_BYTES) === 0;
  }

  digestOf(siteId: SiteId): string | undefined {
    const entry = this.index.entryOf(siteId);
    return entry < 0 || this.isUnknown(entry) ? undefined : this.digests.toString('hex', entry * DIGEST_BYTES, (entry + 1) * DIGEST_BYTES);
  }

  /** A digest that is not an MD5 in hex is held as unknown, so the site is read again. */
  set(siteId: SiteId, digest: string): void {
    if (!this.readHex(digest)) {
      this.setUnknown(siteId);
      return;
    }
    const entry = this.hold(siteId);
    this.scratch.copy(this.digests, entry * DIGEST_BYTES);
  }

  setUnknown(siteId: SiteId): void {
    const entry = this.hold(siteId);
    UNKNOWN_DIGEST.copy(this.digests, entry * DIGEST_BYTES);
  }

  copyFrom(source: SiteDigestTable, siteId: SiteId): void {
    const from = source.index.entryOf(siteId);
    if (from < 0) return;
    const entry = this.hold(siteId);
    source.digests.copy(this.digests, entry * DIGEST_BYTES, from * DIGEST_BYTES, (from + 1) * DIGEST_BYTES);
  }

  delete(siteId: SiteId): void {
    if (this.index.remove(siteId) < 0) return;
    const bucket = bucketOf(siteId);
    const left = this.bucketSizes.get(bucket)! - 1;
    if (left === 0) this.bucketSizes.delete(bucket);
    else this.bucketSizes.set(bucket, left);
  }

  buckets(): IterableIterator<string> {
    return this.bucketSizes.keys();
  }

  sites(): IterableIterator<SiteId> {
    return this.index.siteIds();
  }

  /** One pass over all sites, whose ids need no text to be bucketed. */
  *sitesIn(buckets: ReadonlySet<string>): IterableIterator<SiteId> {
    const numeric = new Set<number>();
    for (const bucket of buckets) numeric.add(Number(bucket));
    for (const entry of this.index.entries()) {
      const id = this.index.numericIdOf(entry);
      const inBuckets = Number.isNaN(id) ? buckets.has(bucketOf(this.index.siteIdOf(entry))) : numeric.has(bucketNumber(id));
      if (inBuckets) yield this.index.siteIdOf(entry);
    }
  }

  /** The site's entry, with room for its digest (the bytes may move: read them after). */
  private hold(siteId: SiteId): number {
    const had = this.index.size;
    const entry = this.index.add(siteId);
    if (this.index.size > had) {
      const bucket = bucketOf(siteId);
      this.bucketSizes.set(bucket, (this.bucketSizes.get(bucket) ?? 0) + 1);
    }
    if ((entry + 1) * DIGEST_BYTES > this.digests.length) {
      const grown = Buffer.alloc(this.digests.length * 2);
      this.digests.copy(grown);
      this.digests = grown;
    }
    return entry;
  }

  private isUnknown(entry: number): boolean {
    return UNKNOWN_DIGEST.compare(this.digests, entry * DIGEST_BYTES, (entry + 1) * DIGEST_BYTES) === 0;
  }

  /** Into the scratch bytes; false when `digest` is not an MD5 in hex. */
  private readHex(digest: string): boolean {
    return digest.length === 2 * DIGEST_BYTES && this.scratch.write(digest, 'hex') === DIGEST_BYTES;
  }
}

/** What the table's sites were read as: the next resync reads again only those whose digest changed. */
export class SiteDigests {
  readonly buckets = new Map<string, string>();
  readonly sites = new SiteDigestTable();

  /** A site read on its own since: the next resync reads its bucket's digests again, not its rows. */
  remember(siteId: SiteId, held: SiteDigest): void {
    this.sites.set(siteId, held.digest);
    this.buckets.delete(held.bucket);
  }

  /** Kept as unknown, not dropped: a site listed in no bucket would have its deletion go unseen. */
  forget(siteId: SiteId): void {
    this.sites.setUnknown(siteId);
    this.buckets.delete(bucketOf(siteId));
  }

  /** Once the table holds the resync's sites; reloads that land meanwhile are settled after, by settleReloads. */
  async takeResync(resync: ResyncDigests, slices: Slices): Promise<void> {
    this.buckets.clear();
    for (const [bucket, digest] of resync.bucketDigests) this.buckets.set(bucket, digest);
    for (const siteId of resync.removed) {
      this.sites.delete(siteId);
      if (slices.over) await slices.next();
    }
    for (const siteId of resync.siteDigests.sites()) {
      this.sites.copyFrom(resync.siteDigests, siteId);
      if (slices.over) await slices.next();
    }
  }

  /**
   * `reloaded`: sites reloaded on their own during the resync, with their digest; `keptReloads`: those whose
   * rows the table kept over the resync's. Where the table holds a reload's rows, the reload's digest is kept.
   */
  settleReloads(resync: ResyncDigests, reloaded: ReadonlyMap<SiteId, SiteDigest | undefined>, keptReloads: readonly SiteId[]): void {
    const kept = new Set(keptReloads);
    const removed = new Set(resync.removed);
    for (const [siteId, digest] of reloaded) {
      const readByResync = resync.changed.has(siteId) || removed.has(siteId);
      if (readByResync && !kept.has(siteId)) continue;
      if (digest === undefined) this.forget(siteId);
      else this.remember(siteId, digest);
    }
    for (const siteId of kept) if (!reloaded.has(siteId)) this.forget(siteId);
  }
}
