import type { SiteId } from '../decision/types.js';
import type { SiteResync } from './snapshot-loader.js';

/** Sites whose ids share a run of BUCKET_SPAN share a bucket: a resync compares one digest per bucket first. */
export const BUCKET_SPAN = 256;

/** A site's digest (of everything the snapshot holds of it), and its bucket. */
export interface SiteDigest {
  readonly digest: string;
  readonly bucket: string;
}

/** The bucket of a site id (decimal digits, up to 2^63 - 1): as PostgreSQL's `id / BUCKET_SPAN` spells it. */
function bucketOf(siteId: SiteId): string {
  return (BigInt(siteId) / BigInt(BUCKET_SPAN)).toString();
}

/**
 * What the snapshot's sites were read as: each bucket's digest as the last resync read it, and each
 * site's digest for the rows the table holds of it. The next resync reads again only the sites whose
 * digest changed, and those with none.
 */
export class SiteDigests {
  readonly buckets = new Map<string, string>();
  readonly sites = new Map<SiteId, SiteDigest>();

  /**
   * A site read on its own since, with the digest read beside its rows: the next resync reads its
   * bucket's digests again, but not the site's rows unless they changed once more.
   */
  remember(siteId: SiteId, held: SiteDigest): void {
    this.sites.set(siteId, held);
    this.buckets.delete(held.bucket);
  }

  /** A site read on its own since, whose digest is not known: the next resync reads it again. */
  forget(siteId: SiteId): void {
    const held = this.sites.get(siteId);
    this.sites.delete(siteId);
    this.buckets.delete(held?.bucket ?? bucketOf(siteId));
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
    for (const siteId of resync.removed) this.sites.delete(siteId);
    for (const [siteId, held] of resync.siteDigests) this.sites.set(siteId, held);
    const kept = new Set(keptReloads);
    const readByResync = new Set([...resync.changed.keys(), ...resync.removed]);
    for (const [siteId, digest] of reloaded) {
      if (readByResync.has(siteId) && !kept.has(siteId)) continue;
      if (digest === undefined) this.forget(siteId);
      else this.remember(siteId, digest);
    }
    for (const siteId of kept) if (!reloaded.has(siteId)) this.forget(siteId);
  }
}
