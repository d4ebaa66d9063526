import type pg from 'pg';
import { allowlistNetwork } from '../decision/client-ip.js';
import { NetworkList } from '../decision/network-list.js';
import type { Allowlist, Brownout, KeyCredential, KeyHash, SiteCredentials, SiteId } from '../decision/types.js';

/** Sites by id: the plain data a CredentialSnapshot hands the decision. */
export type SiteTable = Map<SiteId, SiteCredentials>;

/** What the decision needs of a site: whether it may authenticate at all, and its sunset grace. */
interface SiteCredentialsRow {
  id: string;
  enabled: boolean;
  grace_until_ms: number | null;
}
/** An unrevoked key as the decision matches it: by the hex SHA-256 of the key, never the key. */
interface ActiveKeyHashRow {
  site_id: string;
  id: string;
  hash: string;
  expires_at_ms: number | null;
}
interface AllowlistNetworkRow {
  site_id: string;
  network: string;
  prefix: number;
}

// bigint columns are read as text so that no site id near 2^63 loses digits.
const SITES = 'SELECT id::text AS id, enabled, (extract(epoch FROM apikey_grace_until) * 1000)::float8 AS grace_until_ms FROM sites';
const KEYS = `SELECT site_id::text AS site_id, id::text AS id, encode(key_sha256, 'hex') AS hash,
                     (extract(epoch FROM expires_at) * 1000)::float8 AS expires_at_ms
                FROM api_keys WHERE revoked_at IS NULL`;
const ALLOWLIST = 'SELECT site_id::text AS site_id, host(cidr) AS network, masklen(cidr) AS prefix FROM allowlist_entries';

/** A snapshot holds one per site: a family without networks holds no list. */
class SiteAllowlist implements Allowlist {
  constructor(
    private readonly ipv4: NetworkList | undefined,
    private readonly ipv6: NetworkList | undefined,
  ) {}

  check(address: string, family: 'ipv4' | 'ipv6'): boolean {
    const networks = family === 'ipv4' ? this.ipv4 : this.ipv6;
    return networks !== undefined && networks.includes(address);
  }
}

/**
 * A site's allowlist from its entries (network and prefix as PostgreSQL's host() and masklen() give
 * them), as the decision reads it: IPv4 networks, an IPv4-mapped one included, admit IPv4 clients
 * only; IPv6 networks admit IPv6 clients only, even one that covers ::ffff:0:0/96.
 * Matched in plain arithmetic, not with a BlockList (see NetworkList).
 */
export function buildAllowlist(entries: Iterable<Pick<AllowlistNetworkRow, 'network' | 'prefix'>>): Allowlist {
  const ipv4 = new NetworkList('ipv4');
  const ipv6 = new NetworkList('ipv6');
  for (const entry of entries) {
    const network = allowlistNetwork(entry.network, entry.prefix);
    if (network !== undefined) (network.family === 'ipv4' ? ipv4 : ipv6).add(network.address, network.prefix);
  }
  return new SiteAllowlist(ipv4.size > 0 ? ipv4 : undefined, ipv6.size > 0 ? ipv6 : undefined);
}

/** Rows handled between two yields to the event loop while a snapshot is built: a check waits for one slice at most. */
const SLICE_ROWS = 2_000;

/** Lets the checks that queued meanwhile run. */
function yieldToChecks(): Promise<void> {
  return new Promise((resolveYield) => setImmediate(resolveYield));
}

/** The sites of these rows, or only the `wanted` ones. */
async function buildSites(sites: SiteCredentialsRow[], keys: ActiveKeyHashRow[], allowlist: AllowlistNetworkRow[], wanted?: ReadonlySet<SiteId>): Promise<SiteTable> {
  const keysBySite = new Map<SiteId, Map<KeyHash, KeyCredential>>();
  let rows = 0;
  for (const key of keys) {
    if (wanted !== undefined && !wanted.has(key.site_id)) continue;
    let siteKeys = keysBySite.get(key.site_id);
    if (siteKeys === undefined) keysBySite.set(key.site_id, (siteKeys = new Map()));
    siteKeys.set(key.hash, { keyId: key.id, expiresAt: key.expires_at_ms });
    if (++rows % SLICE_ROWS === 0) await yieldToChecks();
  }
  const entriesBySite = new Map<SiteId, AllowlistNetworkRow[]>();
  for (const entry of allowlist) {
    if (wanted !== undefined && !wanted.has(entry.site_id)) continue;
    let entries = entriesBySite.get(entry.site_id);
    if (entries === undefined) entriesBySite.set(entry.site_id, (entries = []));
    entries.push(entry);
    if (++rows % SLICE_ROWS === 0) await yieldToChecks();
  }
  const table: SiteTable = new Map();
  for (const site of sites) {
    if (wanted !== undefined && !wanted.has(site.id)) continue;
    table.set(site.id, {
      siteId: site.id,
      enabled: site.enabled,
      graceUntil: site.grace_until_ms,
      keysByHash: keysBySite.get(site.id) ?? new Map(),
      allowlist: buildAllowlist(entriesBySite.get(site.id) ?? []),
    });
    // A site costs several rows' work: its maps and its allowlist's lists.
    if (++rows % (SLICE_ROWS / 4) === 0) await yieldToChecks();
  }
  return table;
}

/** A condition on the column that holds the site id (`id` on sites, `site_id` on the others). */
type SiteFilter = (column: string) => string;

/** The three tables' rows of the sites `filter` selects, read in the transaction `client` has open. */
async function readSiteRows(client: pg.PoolClient, filter: SiteFilter, params: unknown[]): Promise<[SiteCredentialsRow[], ActiveKeyHashRow[], AllowlistNetworkRow[]]> {
  const sites = await client.query<SiteCredentialsRow>(`${SITES} WHERE ${filter('id')}`, params);
  const keys = await client.query<ActiveKeyHashRow>(`${KEYS} AND ${filter('site_id')}`, params);
  const allowlist = await client.query<AllowlistNetworkRow>(`${ALLOWLIST} WHERE ${filter('site_id')}`, params);
  return [sites.rows, keys.rows, allowlist.rows];
}

/** Runs `read` in one REPEATABLE READ transaction, so a key never appears without its site or allowlist. */
async function inOneSnapshot<T>(pool: pg.Pool, read: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let result: T;
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    result = await read(client);
    await client.query('COMMIT');
  } catch (error) {
    // Discarded, not rolled back: after a time-out the connection may still be busy with the query,
    // and a ROLLBACK would wait behind it. Closing the connection ends the transaction too.
    client.release(error instanceof Error ? error : true);
    throw error;
  }
  client.release();
  return result;
}

async function readConsistently(pool: pg.Pool, filter: SiteFilter, params: unknown[]): Promise<SiteTable> {
  const rows = await inOneSnapshot(pool, (client) => readSiteRows(client, filter, params));
  return buildSites(...rows);
}

/**
 * Per site, a digest of everything the snapshot holds of it (the columns SITES, KEYS and ALLOWLIST
 * read; a column added to those must be added here), and its bucket: sites whose ids share a run of
 * BUCKET_SPAN share a bucket. Empty parts stay in place, so that no two different sites spell the
 * same text. `$1` selects buckets (NULL: all).
 */
const BUCKET_SPAN = 256;
const PER_SITE_DIGESTS = `
  WITH keys AS (
         SELECT site_id, string_agg(encode(key_sha256, 'hex') || ':' || id || ':' || coalesce((extract(epoch FROM expires_at) * 1000)::float8::text, '-'), ',' ORDER BY id) AS keys
           FROM api_keys WHERE revoked_at IS NULL AND ($1::bigint[] IS NULL OR site_id / ${BUCKET_SPAN} = ANY($1)) GROUP BY site_id),
       networks AS (
         SELECT site_id, string_agg(host(cidr) || '/' || masklen(cidr), ',' ORDER BY cidr) AS networks
           FROM allowlist_entries WHERE $1::bigint[] IS NULL OR site_id / ${BUCKET_SPAN} = ANY($1) GROUP BY site_id)
  SELECT s.id, s.id / ${BUCKET_SPAN} AS bucket,
         md5(s.enabled::text || '|' || coalesce((extract(epoch FROM s.apikey_grace_until) * 1000)::float8::text, '-') || '|'
             || coalesce(k.keys, '') || '|' || coalesce(n.networks, '')) AS digest
    FROM sites s LEFT JOIN keys k ON k.site_id = s.id LEFT JOIN networks n ON n.site_id = s.id
   WHERE $1::bigint[] IS NULL OR s.id / ${BUCKET_SPAN} = ANY($1)`;
/** One row per bucket: a resync that finds nothing changed reads a few hundred rows, not a row per site. */
const BUCKET_DIGESTS = `WITH per_site AS (${PER_SITE_DIGESTS})
  SELECT bucket::text AS bucket, md5(string_agg(id::text || '=' || digest, ',' ORDER BY id)) AS digest FROM per_site GROUP BY bucket`;
const SITE_DIGESTS = `SELECT id::text AS id, bucket::text AS bucket, digest FROM (${PER_SITE_DIGESTS}) per_site`;

/** The bucket of a site id (decimal digits, up to 2^63 - 1): as PostgreSQL's `id / BUCKET_SPAN` spells it. */
function bucketOf(siteId: SiteId): string {
  return (BigInt(siteId) / BigInt(BUCKET_SPAN)).toString();
}

/** What the last resync read: each bucket's digest, and each site's with its bucket. */
export class SiteDigests {
  readonly buckets = new Map<string, string>();
  readonly sites = new Map<SiteId, { readonly digest: string; readonly bucket: string }>();

  /** A site read on its own since: the next resync reads its bucket again. */
  forget(siteId: SiteId): void {
    const held = this.sites.get(siteId);
    this.sites.delete(siteId);
    this.buckets.delete(held?.bucket ?? bucketOf(siteId));
  }

  /** Takes what a resync read, once the table holds it. */
  update(resync: SiteResync): void {
    this.buckets.clear();
    for (const [bucket, digest] of resync.bucketDigests) this.buckets.set(bucket, digest);
    for (const siteId of resync.removed) this.sites.delete(siteId);
    for (const [siteId, held] of resync.siteDigests) this.sites.set(siteId, held);
  }
}

/** Beyond this share of the sites changed, their rows are read whole rather than named one by one. */
const NAMED_READ_MAX_SHARE = 0.25;

/** What a resync found: the digests it read, the sites that changed (read again), and those gone. */
export interface SiteResync {
  readonly bucketDigests: ReadonlyMap<string, string>;
  /** The sites of the buckets whose digest changed. */
  readonly siteDigests: ReadonlyMap<SiteId, { readonly digest: string; readonly bucket: string }>;
  /** Sites whose digest differs from the one held, new ones included. */
  readonly changed: SiteTable;
  /** Sites held that no longer exist. */
  readonly removed: SiteId[];
}

/**
 * A full resync that reads again only what changed, in one transaction: a digest per bucket of sites;
 * for the buckets whose digest is not the one held, a digest per site; and the rows of the sites whose
 * digest changed (all rows, if that is most of them). Comparing and building yield to the event loop
 * every few thousand rows, so that a large installation's resync does not hold checks up.
 */
export async function resyncSites(pool: pg.Pool, held: SiteDigests): Promise<SiteResync> {
  const read = await inOneSnapshot(pool, async (client) => {
    const bucketRows = (await client.query<{ bucket: string; digest: string }>(BUCKET_DIGESTS, [null])).rows;
    const bucketDigests = new Map<string, string>();
    const changedBuckets: string[] = [];
    for (const { bucket, digest } of bucketRows) {
      bucketDigests.set(bucket, digest);
      if (held.buckets.get(bucket) !== digest) changedBuckets.push(bucket);
    }
    const siteDigests = new Map<SiteId, { digest: string; bucket: string }>();
    const changedIds: SiteId[] = [];
    let counted = 0;
    if (changedBuckets.length > 0) {
      const siteRows = (await client.query<{ id: SiteId; bucket: string; digest: string }>(SITE_DIGESTS, [changedBuckets])).rows;
      for (const { id, bucket, digest } of siteRows) {
        siteDigests.set(id, { digest, bucket });
        if (held.sites.get(id)?.digest !== digest) changedIds.push(id);
        if (++counted % SLICE_ROWS === 0) await yieldToChecks();
      }
    }
    const removed: SiteId[] = [];
    if (changedBuckets.length > 0 || bucketDigests.size !== held.buckets.size) {
      const reread = new Set(changedBuckets);
      for (const [id, { bucket }] of held.sites) {
        if (!siteDigests.has(id) && (!bucketDigests.has(bucket) || reread.has(bucket))) removed.push(id);
        if (++counted % SLICE_ROWS === 0) await yieldToChecks();
      }
    }
    if (changedIds.length === 0) return { bucketDigests, siteDigests, changedIds, removed, rows: undefined };
    const rows =
      changedIds.length > held.sites.size * NAMED_READ_MAX_SHARE
        ? await readSiteRows(client, () => 'true', [])
        : await readSiteRows(client, (column) => `${column} = ANY($1::bigint[])`, [changedIds]);
    return { bucketDigests, siteDigests, changedIds, removed, rows };
  });
  const { bucketDigests, siteDigests, changedIds, removed, rows } = read;
  // Read whole, the rows also hold sites that did not change: those keep the objects checks use now.
  const changed: SiteTable = rows === undefined ? new Map() : await buildSites(...rows, changedIds.length < held.sites.size ? new Set(changedIds) : undefined);
  return { bucketDigests, siteDigests, changed, removed };
}

interface BrownoutRow {
  id: string;
  from_ms: number;
  until_ms: number;
  site_ids: string[] | null;
  dry_run: boolean;
}

// Ended and cancelled brownouts decide nothing; one that ends in the past can stay in the table.
const BROWNOUTS = `SELECT id::text AS id, (extract(epoch FROM starts_at) * 1000)::float8 AS from_ms,
                          (extract(epoch FROM ends_at) * 1000)::float8 AS until_ms, site_ids::text[] AS site_ids, dry_run
                     FROM brownouts WHERE cancelled_at IS NULL AND ends_at > now()`;

function toBrownout(row: BrownoutRow): Brownout {
  return { id: row.id, from: row.from_ms, until: row.until_ms, siteIds: row.site_ids && new Set(row.site_ids), dryRun: row.dry_run };
}

/** Brownouts not cancelled and not over yet. */
export async function loadBrownouts(pool: pg.Pool): Promise<Brownout[]> {
  return (await pool.query<BrownoutRow>(BROWNOUTS)).rows.map(toBrownout);
}

/** Every site with its active keys and allowlist. */
export function loadAllSites(pool: pg.Pool): Promise<SiteTable> {
  return readConsistently(pool, () => 'true', []);
}

/** The named sites; an id missing from the result no longer exists. */
export function loadSites(pool: pg.Pool, siteIds: readonly SiteId[]): Promise<SiteTable> {
  return readConsistently(pool, (column) => `${column} = ANY($1::bigint[])`, [siteIds]);
}
