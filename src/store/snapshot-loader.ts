import type pg from 'pg';
import { buildAllowlist } from '../allowlist/allowlist.js';
import type { Brownout, ClientId, SiteAuthMethod, SiteId } from '../decision/types.js';
import { Slices } from '../common/slices.js';
import { withPooledClient } from './pooled-client.js';
import { siteKeys, type HashedKey } from './site-keys.js';
import { BUCKET_SPAN, SiteDigestTable, type ResyncDigests, type SiteDigest, type SiteDigests } from './site-digests.js';
import { SiteRecords } from './site-records.js';

/** Sites by id, as records: the plain data a CredentialSnapshot hands the decision. */
export type LoadedSites = SiteRecords;

/** What the decision needs of a site: whether it may authenticate at all, and its sunset grace. */
interface SiteCredentialsRow {
  id: string;
  enabled: boolean;
  grace_until_ms: number | null;
  auth_method: string;
  tokens_not_before_ms: number | null;
}
/** A token client as the decision matches it: by the token's client_id claim, and since when its tokens count. */
interface TokenClientRow {
  site_id: string;
  client_id: ClientId;
  tokens_not_before_ms: number;
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
const SITES = `SELECT id::text AS id, enabled, (extract(epoch FROM apikey_grace_until) * 1000)::float8 AS grace_until_ms, auth_method,
                      (extract(epoch FROM tokens_not_before) * 1000)::float8 AS tokens_not_before_ms
                 FROM sites`;
const TOKEN_CLIENTS = 'SELECT site_id::text AS site_id, client_id, (extract(epoch FROM tokens_not_before) * 1000)::float8 AS tokens_not_before_ms FROM token_clients';
const KEYS = `SELECT site_id::text AS site_id, id::text AS id, encode(key_sha256, 'hex') AS hash,
                     (extract(epoch FROM expires_at) * 1000)::float8 AS expires_at_ms
                FROM api_keys WHERE revoked_at IS NULL`;
const ALLOWLIST = 'SELECT site_id::text AS site_id, host(cidr) AS network, masklen(cidr) AS prefix FROM allowlist_entries';

/** A row the snapshot cannot use (written with SQL, past the CLI's checks): left out, and reported. */
export interface UnusableRow {
  readonly table: 'sites' | 'api_keys' | 'allowlist_entries' | 'brownouts';
  /** The row's id, or for an allowlist entry its site and network. */
  readonly row: string;
  readonly reason: string;
}

/** Hears each row a load leaves out. */
export type UnusableRowListener = (row: UnusableRow) => void;

const ignoreUnusable: UnusableRowListener = () => undefined;
const HASH = /^[0-9a-f]{64}$/;

const NO_CLIENTS: ReadonlyMap<ClientId, number> = new Map();

/** A method the schema does not know (a row written by hand) is read as the stricter one. */
function siteAuthMethod(value: string): SiteAuthMethod {
  return value === 'both' ? 'both' : 'tokens';
}

/** The rows of the four tables that make up the sites, as one transaction read them. */
type SiteRows = [SiteCredentialsRow[], ActiveKeyHashRow[], AllowlistNetworkRow[], TokenClientRow[]];

/**
 * The sites of these rows, or only the `wanted` ones, written into `table`. Rows that would break the
 * decision are left out, each reported: a key that cannot be matched is refused (102), a site that
 * cannot be built is unknown (101). One odd row never fails every check. Building yields to checks in
 * slices; each site is a record as soon as it is built, so no run of site objects outlives a slice.
 */
async function buildSites(
  [sites, keys, allowlist, tokenClients]: SiteRows,
  onUnusable: UnusableRowListener,
  wanted?: ReadonlySet<SiteId>,
  table: LoadedSites = new SiteRecords(),
): Promise<LoadedSites> {
  const slices = new Slices();
  const keysBySite = new Map<SiteId, HashedKey[]>();
  for (const key of keys) {
    if (slices.over) await slices.next();
    if (wanted !== undefined && !wanted.has(key.site_id)) continue;
    if (!HASH.test(key.hash) || Number.isNaN(key.expires_at_ms)) {
      onUnusable({ table: 'api_keys', row: key.id, reason: 'its hash or expiry cannot be read' });
      continue;
    }
    let keysOfSite = keysBySite.get(key.site_id);
    if (keysOfSite === undefined) keysBySite.set(key.site_id, (keysOfSite = []));
    keysOfSite.push({ hash: key.hash, keyId: key.id, expiresAt: key.expires_at_ms });
  }
  const entriesBySite = new Map<SiteId, AllowlistNetworkRow[]>();
  for (const entry of allowlist) {
    if (slices.over) await slices.next();
    if (wanted !== undefined && !wanted.has(entry.site_id)) continue;
    let entries = entriesBySite.get(entry.site_id);
    if (entries === undefined) entriesBySite.set(entry.site_id, (entries = []));
    entries.push(entry);
  }
  const clientsBySite = new Map<SiteId, Map<ClientId, number>>();
  for (const client of tokenClients) {
    if (slices.over) await slices.next();
    if (wanted !== undefined && !wanted.has(client.site_id)) continue;
    let clients = clientsBySite.get(client.site_id);
    if (clients === undefined) clientsBySite.set(client.site_id, (clients = new Map()));
    // A cut-off that cannot be read admits none of the client's tokens.
    const registeredAt = client.tokens_not_before_ms;
    clients.set(client.client_id, typeof registeredAt === 'number' && !Number.isNaN(registeredAt) ? registeredAt : Number.POSITIVE_INFINITY);
  }
  for (const site of sites) {
    if (wanted !== undefined && !wanted.has(site.id)) continue;
    if (Number.isNaN(site.grace_until_ms) || Number.isNaN(site.tokens_not_before_ms) || typeof site.enabled !== 'boolean') {
      onUnusable({ table: 'sites', row: site.id, reason: 'its state, grace or token cut-off cannot be read; its requests get 101' });
      continue;
    }
    table.set(site.id, {
      siteId: site.id,
      enabled: site.enabled,
      graceUntil: site.grace_until_ms,
      keysByHash: siteKeys(keysBySite.get(site.id) ?? []),
      // Left out, an entry admits nobody: the site fails closed for those addresses.
      allowlist: buildAllowlist(entriesBySite.get(site.id) ?? [], (entry) =>
        onUnusable({
          table: 'allowlist_entries',
          row: `${site.id} ${entry.network}/${entry.prefix}`,
          reason: 'an IPv4-mapped network wider than ::ffff:0:0/96, which would reach beyond IPv4',
        }),
      ),
      authMethod: siteAuthMethod(site.auth_method),
      tokensNotBefore: site.tokens_not_before_ms,
      tokenClients: clientsBySite.get(site.id) ?? NO_CLIENTS,
    });
    if (slices.over) await slices.next();
  }
  return table;
}

/** A condition on the column that holds the site id (`id` on sites, `site_id` on the others). */
type SiteFilter = (column: string) => string;

/** The four tables' rows of the sites `filter` selects, read in the transaction `client` has open. */
async function readSiteRows(client: pg.PoolClient, filter: SiteFilter, params: unknown[]): Promise<SiteRows> {
  const sites = await client.query<SiteCredentialsRow>(`${SITES} WHERE ${filter('id')}`, params);
  const keys = await client.query<ActiveKeyHashRow>(`${KEYS} AND ${filter('site_id')}`, params);
  const allowlist = await client.query<AllowlistNetworkRow>(`${ALLOWLIST} WHERE ${filter('site_id')}`, params);
  const tokenClients = await client.query<TokenClientRow>(`${TOKEN_CLIENTS} WHERE ${filter('site_id')}`, params);
  return [sites.rows, keys.rows, allowlist.rows, tokenClients.rows];
}

/** Runs `read` in one REPEATABLE READ transaction, so a key never appears without its site or allowlist. */
async function inOneSnapshot<T>(pool: pg.Pool, read: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  // On failure the connection is discarded, not rolled back: after a time-out it may still be busy with
  // the query, and a ROLLBACK would wait behind it. Closing the connection ends the transaction too.
  return withPooledClient(
    pool,
    async (client) => {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const result = await read(client);
      await client.query('COMMIT');
      return result;
    },
    true,
  );
}

/**
 * A whole read goes by runs of this many sites, each run's rows built and let go before the next is
 * read, so that they die young. Read at once, 100,000 sites' rows (~100 MB) outlived the young
 * generation, filled the old one, and the full collection that freed them paused checks.
 */
const SITES_PER_RUN = 2_000;
/** `$1`: the last site id of the run before (NULL: none yet). The last site id of the next run, NULL when none is left. */
const NEXT_RUN_END = `SELECT max(id)::text AS last FROM (SELECT id FROM sites WHERE $1::bigint IS NULL OR id > $1 ORDER BY id LIMIT ${SITES_PER_RUN}) run`;
/** `$1` and `$2`: the last site id of the run before (NULL: none) and of this run. */
const inRun: SiteFilter = (column) => `($1::bigint IS NULL OR ${column} > $1) AND ${column} <= $2::bigint`;

/** Every site (or the `wanted` ones), read run by run in the transaction `client` has open. */
async function readAllSites(client: pg.PoolClient, onUnusable: UnusableRowListener, wanted?: ReadonlySet<SiteId>): Promise<LoadedSites> {
  const sites = new SiteRecords();
  for (let after: string | null = null; ; ) {
    const last: string | null = (await client.query<{ last: string | null }>(NEXT_RUN_END, [after])).rows[0]?.last ?? null;
    if (last === null) return sites;
    await buildSites(await readSiteRows(client, inRun, [after, last]), onUnusable, wanted, sites);
    after = last;
  }
}

/** Named sites are read and built this many at a time, so that one run's rows are let go before the next is read. */
const NAMED_SITES_PER_RUN = 200;

/**
 * The named sites, read and built NAMED_SITES_PER_RUN at a time within the caller's transaction;
 * `alsoOfRun` reads more of each run there. Read whole, a thousand sites' rows outlived the young
 * generation while their queries ran: each scavenge copied them, the next promoted them, and the full
 * collection that freed them held checks up.
 */
async function readNamedSites(
  client: pg.PoolClient,
  siteIds: readonly SiteId[],
  onUnusable: UnusableRowListener,
  alsoOfRun?: (run: readonly SiteId[]) => Promise<void>,
): Promise<LoadedSites> {
  const sites = new SiteRecords();
  for (let start = 0; start < siteIds.length; start += NAMED_SITES_PER_RUN) {
    const run = siteIds.slice(start, start + NAMED_SITES_PER_RUN);
    const rows = await readSiteRows(client, namedSites, [run]);
    await alsoOfRun?.(run);
    await buildSites(rows, onUnusable, undefined, sites);
  }
  return sites;
}

/**
 * Per site, a digest of everything the snapshot holds of it (the columns SITES, KEYS, ALLOWLIST and
 * TOKEN_CLIENTS read; a column added to those must be added here and to BUCKET_DIGESTS), and its
 * bucket. Empty parts stay in place, so that no two different sites spell the same text. `filter`
 * selects the sites, as for readSiteRows.
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
const namedSites: SiteFilter = (column) => `${column} = ANY($1::bigint[])`;
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

/** A brownout the decision can apply: times it can compare ('infinity' included), and site ids, not NULLs. */
function usableBrownout(row: BrownoutRow): boolean {
  return !Number.isNaN(row.from_ms) && !Number.isNaN(row.until_ms) && (row.site_ids === null || row.site_ids.every((siteId) => siteId !== null));
}

/** Brownouts not cancelled and not over yet. */
export async function loadBrownouts(pool: pg.Pool, onUnusable: UnusableRowListener = ignoreUnusable): Promise<Brownout[]> {
  const { rows } = await pool.query<BrownoutRow>(BROWNOUTS);
  return rows.flatMap((row) => {
    if (usableBrownout(row)) return [toBrownout(row)];
    onUnusable({ table: 'brownouts', row: row.id, reason: 'its times or site ids cannot be read (a NULL among site_ids?)' });
    return [];
  });
}

/** Every site with its active keys and allowlist. */
export function loadAllSites(pool: pg.Pool, onUnusable: UnusableRowListener = ignoreUnusable): Promise<LoadedSites> {
  return inOneSnapshot(pool, (client) => readAllSites(client, onUnusable));
}

/** The named sites; an id missing from the result no longer exists. */
export async function loadSites(pool: pg.Pool, siteIds: readonly SiteId[], onUnusable: UnusableRowListener = ignoreUnusable): Promise<LoadedSites> {
  return inOneSnapshot(pool, (client) => readNamedSites(client, siteIds, onUnusable));
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
