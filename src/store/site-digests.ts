import type { SiteId } from '../decision/types.js';
import type { SiteResync } from './snapshot-loader.js';

/** Sites whose ids share a run of BUCKET_SPAN share a bucket: a resync compares one digest per bucket first. */
export const BUCKET_SPAN = 256;

/** A site's digest (of everything the snapshot holds of it), and its bucket. */
export interface SiteDigest {
  readonly digest: string;
  readonly bucket: string;
}

const NO_SITES: ReadonlyMap<SiteId, string> = new Map();

/** The bucket of a site id (decimal digits, up to 2^63 - 1): as PostgreSQL's `id / BUCKET_SPAN` spells it. */
function bucketOf(siteId: SiteId): string {
  return (BigInt(siteId) / BigInt(BUCKET_SPAN)).toString();
}

/**
 * What the snapshot's sites were read as: each bucket's digest as the last resync read it, and each
 * site's digest for the rows the table holds of it. The next resync reads again only the sites whose
 * digest changed, and those with none.
 *
 * Sites are held by bucket, each by its digest alone: a resync looks for removed sites only in the
 * buckets it read again, and no site needs an object or a bucket text of its own (100,000 sites held
 * 16.5 MiB so, 9.7 now).
 */
export class SiteDigests {
  readonly buckets = new Map<string, string>();
  private readonly sitesByBucket = new Map<string, Map<SiteId, string>>();

  /** Sites whose digest is held: a sum over a few hundred buckets, asked once a resync. */
  get size(): number {
    let sites = 0;
    for (const bucket of this.sitesByBucket.values()) sites += bucket.size;
    return sites;
  }

  /** The digest held for a site of `bucket`; undefined when none is. */
  digestOf(siteId: SiteId, bucket: string = bucketOf(siteId)): string | undefined {
    return this.sitesByBucket.get(bucket)?.get(siteId);
  }

  /** Buckets that hold a digest of at least one site. */
  heldBuckets(): IterableIterator<string> {
    return this.sitesByBucket.keys();
  }

  /** The sites of a bucket whose digest is held. */
  sitesOf(bucket: string): IterableIterator<SiteId> {
    return (this.sitesByBucket.get(bucket) ?? NO_SITES).keys();
  }

  /**
   * A site read on its own since, with the digest read beside its rows: the next resync reads its
   * bucket's digests again, but not the site's rows unless they changed once more.
   */
  remember(siteId: SiteId, held: SiteDigest): void {
    this.put(siteId, held);
    this.buckets.delete(held.bucket);
  }

  /** A site read on its own since, whose digest is not known: the next resync reads it again. */
  forget(siteId: SiteId): void {
    const bucket = bucketOf(siteId);
    this.drop(siteId, bucket);
    this.buckets.delete(bucket);
  }

  /**
   * Takes what a resync read, once the table holds it. `reloaded`: the sites reloaded on their own
   * while it ran, with the digest read beside their rows (undefined: none known); `keptReloads`: the
   * sites whose newer reload the table kept over the resync's read. Where the table holds a reload's
   * rows, the reload's digest is the one that describes them, not the resync's.
   */
  takeResync(resync: SiteResync, reloaded: ReadonlyMap<SiteId, SiteDigest | undefined>, keptReloads: readonly SiteId[]): void {
    this.buckets.clear();
    for (const [bucket, digest] of resync.bucketDigests) this.buckets.set(bucket, digest);
    for (const siteId of resync.removed) this.drop(siteId, bucketOf(siteId));
    for (const [siteId, held] of resync.siteDigests) this.put(siteId, held);
    const kept = new Set(keptReloads);
    const readByResync = new Set([...resync.changed.keys(), ...resync.removed]);
    for (const [siteId, digest] of reloaded) {
      if (readByResync.has(siteId) && !kept.has(siteId)) continue;
      if (digest === undefined) this.forget(siteId);
      else this.remember(siteId, digest);
    }
    for (const siteId of kept) if (!reloaded.has(siteId)) this.forget(siteId);
  }

  private put(siteId: SiteId, { digest, bucket }: SiteDigest): void {
    let sites = this.sitesByBucket.get(bucket);
    if (sites === undefined) this.sitesByBucket.set(bucket, (sites = new Map()));
    sites.set(siteId, digest);
  }

  private drop(siteId: SiteId, bucket: string): void {
    const sites = this.sitesByBucket.get(bucket);
    if (sites?.delete(siteId) && sites.size === 0) this.sitesByBucket.delete(bucket);
  }
}
