import type pg from 'pg';
import { buildAllowlist } from '../allowlist/allowlist.js';
import { IPV4_MAPPED } from '../allowlist/client-ip.js';
import type { Brownout, ClientId, SiteId } from '../decision/types.js';
import { Slices } from '../common/slices.js';
import { withPooledClient } from './pooled-client.js';
import { siteKeys, type HashedKey } from './site-keys.js';
import { snapshotRowsQuery, snapshotTable, type SiteFilter } from './snapshot-columns.js';
import { SiteRecords } from './site-records.js';

export type LoadedSites = SiteRecords;

// The rows as snapshotRowsQuery reads them: their columns are declared in snapshot-columns.ts.
interface SiteCredentialsRow {
  id: string;
  enabled: boolean;
  grace_until_ms: number | null;
  auth_method: string;
  tokens_not_before_ms: number | null;
}
interface TokenClientRow {
  site_id: string;
  client_id: ClientId;
  tokens_not_before_ms: number;
}
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

/** A row the snapshot cannot use (written with SQL, past the CLI's checks): left out, and reported. */
export interface UnusableRow {
  readonly table: 'sites' | 'api_keys' | 'allowlist_entries' | 'brownouts';
  /** The row's id, or for an allowlist entry its site and network. */
  readonly row: string;
  readonly reason: string;
}

export type UnusableRowListener = (row: UnusableRow) => void;

export const ignoreUnusable: UnusableRowListener = () => undefined;
const HASH = /^[0-9a-f]{64}$/;

const NO_CLIENTS: ReadonlyMap<ClientId, number> = new Map();

type SiteRows = [SiteCredentialsRow[], ActiveKeyHashRow[], AllowlistNetworkRow[], TokenClientRow[]];

/** The `wanted` rows (all when undefined) by site, each as `add` puts it in its site's group. */
async function bySite<R extends { site_id: string }, G>(
  rows: readonly R[],
  slices: Slices,
  wanted: ReadonlySet<SiteId> | undefined,
  newGroup: () => G,
  add: (group: G, row: R) => void,
): Promise<Map<SiteId, G>> {
  const groups = new Map<SiteId, G>();
  for (const row of rows) {
    if (slices.over) await slices.next();
    if (wanted !== undefined && !wanted.has(row.site_id)) continue;
    let group = groups.get(row.site_id);
    if (group === undefined) groups.set(row.site_id, (group = newGroup()));
    add(group, row);
  }
  return groups;
}

/**
 * A row that would break the decision is left out and reported: an unusable key is refused (102), an unusable
 * site unknown (101). Each site is a record once built, so that no run of site objects outlives a slice.
 */
async function buildSites(
  [sites, keys, allowlist, tokenClients]: SiteRows,
  onUnusable: UnusableRowListener,
  wanted: ReadonlySet<SiteId> | undefined,
  table: LoadedSites,
): Promise<LoadedSites> {
  const slices = new Slices();
  const keysBySite = await bySite(keys, slices, wanted, (): HashedKey[] => [], (keysOfSite, key) => {
    if (!HASH.test(key.hash) || Number.isNaN(key.expires_at_ms)) {
      onUnusable({ table: 'api_keys', row: key.id, reason: 'its hash or expiry cannot be read' });
    } else keysOfSite.push({ hash: key.hash, keyId: key.id, expiresAt: key.expires_at_ms });
  });
  const noEntries = (): AllowlistNetworkRow[] => [];
  const entriesBySite = await bySite(allowlist, slices, wanted, noEntries, (entries, entry) => entries.push(entry));
  const noClients = () => new Map<ClientId, number>();
  const clientsBySite = await bySite(tokenClients, slices, wanted, noClients, (clients, client) => {
    // A cut-off that cannot be read admits none of the client's tokens.
    const notBefore = client.tokens_not_before_ms;
    const readable = typeof notBefore === 'number' && !Number.isNaN(notBefore);
    clients.set(client.client_id, readable ? notBefore : Number.POSITIVE_INFINITY);
  });
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
          reason: `an IPv4-mapped network wider than ${IPV4_MAPPED.network}/${IPV4_MAPPED.prefix}, which would reach beyond IPv4`,
        }),
      ),
      // A method the schema does not know (a row written by hand) is read as the stricter one.
      authMethod: site.auth_method === 'both' ? 'both' : 'tokens',
      tokensNotBefore: site.tokens_not_before_ms,
      tokenClients: clientsBySite.get(site.id) ?? NO_CLIENTS,
    });
    if (slices.over) await slices.next();
  }
  return table;
}

async function readSiteRows(client: pg.PoolClient, filter: SiteFilter, params: unknown[]): Promise<SiteRows> {
  const rows: unknown[] = [];
  for (const table of ['sites', 'api_keys', 'allowlist_entries', 'token_clients'] as const) {
    rows.push((await client.query(snapshotRowsQuery(snapshotTable(table), filter), params)).rows);
  }
  return rows as SiteRows;
}

/** Runs `read` in one REPEATABLE READ transaction, so a key never appears without its site or allowlist. */
export async function inOneSnapshot<T>(pool: pg.Pool, read: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  // On failure the connection is discarded, not rolled back: after a time-out it may still be busy with
  // the query, and a ROLLBACK would wait behind it.
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

/** Read at once, 100,000 sites' rows (~100 MB) outlived the young generation, and freeing them paused checks. */
const SITES_PER_RUN = 2_000;
/** `$1`: the last site id of the run before (NULL: none yet). NULL when no site is left. */
const NEXT_RUN_END = `SELECT max(id)::text AS last FROM (SELECT id FROM sites WHERE $1::bigint IS NULL OR id > $1 ORDER BY id LIMIT ${SITES_PER_RUN}) run`;
/** `$1` and `$2`: the last site id of the run before (NULL: none) and of this run. */
const inRun: SiteFilter = (column) => `($1::bigint IS NULL OR ${column} > $1) AND ${column} <= $2::bigint`;
/** `$1`: the site ids to read. */
export const namedSites: SiteFilter = (column) => `${column} = ANY($1::bigint[])`;

export async function readAllSites(client: pg.PoolClient, onUnusable: UnusableRowListener, wanted?: ReadonlySet<SiteId>): Promise<LoadedSites> {
  const sites = new SiteRecords();
  for (let after: string | null = null; ; ) {
    const last: string | null = (await client.query<{ last: string | null }>(NEXT_RUN_END, [after])).rows[0]?.last ?? null;
    if (last === null) return sites;
    await buildSites(await readSiteRows(client, inRun, [after, last]), onUnusable, wanted, sites);
    after = last;
  }
}

/** Named sites are read and built this many at a time, for the reason of SITES_PER_RUN. */
const NAMED_SITES_PER_RUN = 200;

/** The named sites, within the caller's transaction; `alsoOfRun` reads more of each run there. */
export async function readNamedSites(
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

/** Brownouts not cancelled and not over yet; one with times it cannot compare, or a NULL site id, is left out. */
export async function loadBrownouts(pool: pg.Pool, onUnusable: UnusableRowListener = ignoreUnusable): Promise<Brownout[]> {
  const { rows } = await pool.query<BrownoutRow>(BROWNOUTS);
  return rows.flatMap(({ id, from_ms: from, until_ms: until, site_ids: siteIds, dry_run: dryRun }) => {
    if (Number.isNaN(from) || Number.isNaN(until) || (siteIds !== null && siteIds.some((siteId) => siteId === null))) {
      onUnusable({ table: 'brownouts', row: id, reason: 'its times or site ids cannot be read (a NULL among site_ids?)' });
      return [];
    }
    return [{ id, from, until, siteIds: siteIds && new Set(siteIds), dryRun }];
  });
}

export function loadAllSites(pool: pg.Pool, onUnusable: UnusableRowListener = ignoreUnusable): Promise<LoadedSites> {
  return inOneSnapshot(pool, (client) => readAllSites(client, onUnusable));
}

/** The named sites; an id missing from the result no longer exists. */
export async function loadSites(pool: pg.Pool, siteIds: readonly SiteId[], onUnusable: UnusableRowListener = ignoreUnusable): Promise<LoadedSites> {
  return inOneSnapshot(pool, (client) => readNamedSites(client, siteIds, onUnusable));
}
