import type pg from 'pg';
import type { SiteId } from '../decision/types.js';
import { Slices } from '../common/slices.js';
import { BUCKET_SPAN, SiteDigestTable, type ResyncDigests, type SiteDigest, type SiteDigests } from './site-digests.js';
import { SiteRecords } from './site-records.js';
import { ignoreUnusable, inOneSnapshot, namedSites, readAllSites, readNamedSites, type LoadedSites, type SiteFilter, type UnusableRowListener } from './snapshot-loader.js';

/**
 * Per site, a digest of everything the snapshot holds of it (the columns SITES, KEYS, ALLOWLIST and
 * TOKEN_CLIENTS of snapshot-loader.ts read; a column added to those must be added here and to
 * BUCKET_DIGESTS), and its bucket. Empty parts stay in place, so that no two different sites spell the
 * same text. `filter` selects the sites, as for readSiteRows.
 */
function perSiteDigests(filter: SiteFilter): string {
  return `
  WITH keys AS (
         SELECT site_id, string_agg(encode(key_sha256, 'hex') || ':' || id || ':' || coalesce((extract(epoch FROM expires_at) * 1000)::float8::text, '-'), ',' ORDER BY id) AS keys
           FROM api_keys WHERE revoked_at IS NULL AND ${filter('site_id')} GROUP BY site_id),
       networks AS (
         SELECT site_id, string_agg(host(cidr) || '/' || masklen(cidr), ',' ORDER BY cidr) AS networks
           FROM allowlist_entries WHERE ${filter('site_id')} GROUP BY site_id),
       clients AS (
         SELECT site_id, string_agg(md5(client_id) || ':' || (extract(epoch FROM tokens_not_before) * 1000)::float8::text, ',' ORDER BY client_id) AS clients
           FROM token_clients WHERE ${filter('site_id')} GROUP BY site_id)
  SELECT s.id, s.id / ${BUCKET_SPAN} AS bucket,
         md5(s.enabled::text || '|' || coalesce((extract(epoch FROM s.apikey_grace_until) * 1000)::float8::text, '-') || '|'
             || s.auth_method || '|' || coalesce((extract(epoch FROM s.tokens_not_before) * 1000)::float8::text, '-') || '|'
             || coalesce(k.keys, '') || '|' || coalesce(n.networks, '') || '|' || coalesce(c.clients, '')) AS digest
    FROM sites s LEFT JOIN keys k ON k.site_id = s.id LEFT JOIN networks n ON n.site_id = s.id LEFT JOIN clients c ON c.site_id = s.id
   WHERE ${filter('s.id')}`;
}
/** `$1`: the buckets to read. */
const inBuckets: SiteFilter = (column) => `${column} / ${BUCKET_SPAN} = ANY($1::bigint[])`;
/**
 * One row per bucket: a resync that finds nothing changed reads a few hundred rows, not a row per site.
 * Each table's rows in a bucket are folded into one 64-bit value, the XOR of each row's hash over the
 * columns the snapshot reads (as perSiteDigests spells them): no text is made and nothing sorted, so
 * it costs the database a quarter of an MD5 per site (about 0.2 s at 100,000 sites, every resync of
 * every replica). A changed bucket is then compared site by site with perSiteDigests, so this digest
 * only has to change when a bucket's rows do. PostgreSQL 14 brought hash_record_extended and bit_xor.
 */
const BUCKET_DIGESTS = `
  SELECT bucket::text AS bucket, md5(string_agg(part || '=' || folded, ',' ORDER BY part)) AS digest FROM (
    SELECT id / ${BUCKET_SPAN} AS bucket, 's' AS part, bit_xor(hash_record_extended((id, enabled, apikey_grace_until, auth_method, tokens_not_before), 0)) AS folded
      FROM sites GROUP BY 1
    UNION ALL
    SELECT site_id / ${BUCKET_SPAN}, 'k', bit_xor(hash_record_extended((site_id, id, key_sha256, expires_at), 0))
      FROM api_keys WHERE revoked_at IS NULL GROUP BY 1
    UNION ALL
    SELECT site_id / ${BUCKET_SPAN}, 'n', bit_xor(hash_record_extended((site_id, cidr), 0)) FROM allowlist_entries GROUP BY 1
    UNION ALL
    SELECT site_id / ${BUCKET_SPAN}, 'c', bit_xor(hash_record_extended((site_id, client_id, tokens_not_before), 0)) FROM token_clients GROUP BY 1
  ) parts GROUP BY bucket`;
/**
 * The site digests of the buckets asked for, one row per bucket: `<id>:<digest>` per site, joined by
 * commas. A resync that finds most buckets changed reads every site's digest: as a row per site,
 * 100,000 rows outlived the young generation while the result arrived, and the full collection that
 * freed them paused checks; a row per bucket is a few hundred strings.
 */
const BUCKET_SITE_DIGESTS = `SELECT string_agg(id::text || ':' || digest, ',') AS sites FROM (${perSiteDigests(inBuckets)}) per_site GROUP BY bucket`;
const NAMED_SITE_DIGESTS = `SELECT id::text AS id, bucket::text AS bucket, digest FROM (${perSiteDigests(namedSites)}) per_site`;

/** Beyond this share of the sites changed, their rows are read whole rather than named one by one. */
const NAMED_READ_MAX_SHARE = 0.25;

/** What a resync found: the digests it read, the sites that changed (read again), and those gone. */
export interface SiteResync extends ResyncDigests {
  /** Sites whose digest differs from the one held, new ones included, with their rows. */
  readonly changed: LoadedSites;
  readonly removed: SiteId[];
}

/**
 * A full resync that reads again only what changed, in one transaction: a digest per bucket of sites;
 * for the buckets whose digest is not the one held, a digest per site; and the rows of the sites whose
 * digest changed (all rows, run by run, if that is most of them). Comparing and building yield to the
 * event loop every SLICE_MS, so that a large installation's resync does not hold checks up.
 */
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
    // Read whole, the rows also hold sites that did not change: those keep the records checks use now.
    // Unfiltered only when every site changed (the first load): a site in `changed` must have its digest
    // in `siteDigests`, or a digest a reload left would stay on the rows the resync put in its place.
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

/** The named sites, as loadSites reads them, and each one's digest read in the same transaction. */
export interface ReloadedSites {
  readonly sites: LoadedSites;
  readonly digests: ReadonlyMap<SiteId, SiteDigest>;
}

/**
 * loadSites for a notification: with each site's digest beside its rows, the next resync knows the
 * site is current and does not read it again (at 1,000 changes it would rebuild 1,000 sites twice).
 */
export async function loadSitesWithDigests(pool: pg.Pool, siteIds: readonly SiteId[], onUnusable: UnusableRowListener = ignoreUnusable): Promise<ReloadedSites> {
  return inOneSnapshot(pool, async (client) => {
    const digests = new Map<SiteId, SiteDigest>();
    const sites = await readNamedSites(client, siteIds, onUnusable, async (run) => {
      const digestRows = (await client.query<{ id: SiteId; bucket: string; digest: string }>(NAMED_SITE_DIGESTS, [run])).rows;
      for (const { id, bucket, digest } of digestRows) digests.set(id, { digest, bucket });
    });
    return { sites, digests };
  });
}
