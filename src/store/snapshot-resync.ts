import type pg from 'pg';
import type { SiteId } from '../decision/types.js';
import { Slices } from '../common/slices.js';
import { BUCKET_SPAN, SiteDigestTable, type ResyncDigests, type SiteDigest, type SiteDigests } from './site-digests.js';
import { SiteRecords } from './site-records.js';
import { bucketDigestsQuery, siteDigestsQuery, type SiteFilter } from './snapshot-columns.js';
import { ignoreUnusable, inOneSnapshot, namedSites, readAllSites, readNamedSites, type LoadedSites, type UnusableRowListener } from './snapshot-loader.js';

/** `$1`: the buckets to read. */
const inBuckets: SiteFilter = (column) => `${column} / ${BUCKET_SPAN} = ANY($1::bigint[])`;
const BUCKET_DIGESTS = bucketDigestsQuery();
/** A row per bucket: as a row per site, 100,000 rows outlived the young generation, and freeing them paused checks. */
const BUCKET_SITE_DIGESTS = `SELECT string_agg(id::text || ':' || digest, ',') AS sites FROM (${siteDigestsQuery(inBuckets)}) per_site GROUP BY bucket`;
const NAMED_SITE_DIGESTS = `SELECT id::text AS id, bucket::text AS bucket, digest FROM (${siteDigestsQuery(namedSites)}) per_site`;

/** Beyond this share of the sites changed, their rows are read whole rather than named one by one. */
const NAMED_READ_MAX_SHARE = 0.25;

export interface SiteResync extends ResyncDigests {
  readonly changed: LoadedSites;
  readonly removed: SiteId[];
}

/** A digest per bucket, per site of the changed buckets, then the rows of the changed sites, in one transaction. */
export async function resyncSites(pool: pg.Pool, held: SiteDigests, onUnusable: UnusableRowListener = ignoreUnusable): Promise<SiteResync> {
  const read = await inOneSnapshot(pool, async (client) => {
    const bucketRows = (await client.query<{ bucket: string; digest: string }>(BUCKET_DIGESTS)).rows;
    const bucketDigests = new Map<string, string>();
    const changedBuckets: string[] = [];
    for (const { bucket, digest } of bucketRows) {
      bucketDigests.set(bucket, digest);
      if (held.buckets.get(bucket) !== digest) changedBuckets.push(bucket);
    }
    const siteDigests = new SiteDigestTable();
    const changedIds: SiteId[] = [];
    const slices = new Slices();
    if (changedBuckets.length > 0) {
      const siteRows = (await client.query<{ sites: string }>(BUCKET_SITE_DIGESTS, [changedBuckets])).rows;
      for (const { sites } of siteRows) {
        for (const site of sites.split(',')) {
          const id = site.slice(0, site.indexOf(':'));
          const digest = site.slice(id.length + 1);
          siteDigests.set(id, digest);
          if (!held.sites.matches(id, digest)) changedIds.push(id);
        }
        if (slices.over) await slices.next();
      }
    }
    // A held site is gone when its bucket is, or when its bucket was read again without it.
    const removed: SiteId[] = [];
    const reread = new Set(changedBuckets);
    const listed = new Set<string>();
    for (const bucket of held.sites.buckets()) if (!bucketDigests.has(bucket) || reread.has(bucket)) listed.add(bucket);
    if (listed.size > 0) {
      for (const id of held.sites.sitesIn(listed)) {
        if (!siteDigests.has(id)) removed.push(id);
        if (slices.over) await slices.next();
      }
    }
    if (changedIds.length === 0) return { bucketDigests, siteDigests, changedIds, removed, changed: new SiteRecords() };
    // Read whole, the rows also hold unchanged sites, which keep their records. Unfiltered only on the first load: a
    // site in `changed` needs its digest in `siteDigests`, or one a reload left would stay on the resync's rows.
    const everySiteChanged = changedBuckets.length === bucketDigests.size && changedIds.length === siteDigests.size;
    const changed =
      changedIds.length > held.sites.size * NAMED_READ_MAX_SHARE
        ? await readAllSites(client, onUnusable, everySiteChanged ? undefined : new Set(changedIds))
        : await readNamedSites(client, changedIds, onUnusable);
    return { bucketDigests, siteDigests, changedIds, removed, changed };
  });
  const { bucketDigests, siteDigests, changedIds, removed, changed } = read;
  // A changed site whose rows could not be used goes, as a full load leaves it out: it fails closed.
  for (const siteId of changedIds) if (!changed.has(siteId)) removed.push(siteId);
  return { bucketDigests, siteDigests, changed, removed };
}

export interface ReloadedSites {
  readonly sites: LoadedSites;
  readonly digests: ReadonlyMap<SiteId, SiteDigest>;
}

/** With each site's digest beside its rows, the next resync knows the site is current and does not read it again. */
export async function loadSitesWithDigests(pool: pg.Pool, siteIds: readonly SiteId[], onUnusable: UnusableRowListener): Promise<ReloadedSites> {
  return inOneSnapshot(pool, async (client) => {
    const digests = new Map<SiteId, SiteDigest>();
    const sites = await readNamedSites(client, siteIds, onUnusable, async (run) => {
      const digestRows = (await client.query<{ id: SiteId; bucket: string; digest: string }>(NAMED_SITE_DIGESTS, [run])).rows;
      for (const { id, bucket, digest } of digestRows) digests.set(id, { digest, bucket });
    });
    return { sites, digests };
  });
}
