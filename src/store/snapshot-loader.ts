import type pg from 'pg';
import { buildAllowlist } from '../allowlist/allowlist.js';
import { IPV4_MAPPED } from '../allowlist/client-ip.js';
import type { Brownout, ClientId, SiteAuthMethod, SiteId } from '../decision/types.js';
import { Slices } from '../common/slices.js';
import { withPooledClient } from './pooled-client.js';
import { siteKeys, type HashedKey } from './site-keys.js';
import { snapshotRowsQuery, snapshotTable, type SiteFilter } from './snapshot-columns.js';
import { SiteRecords } from './site-records.js';

/** Sites by id, as records: the plain data a CredentialSnapshot hands the decision. */
export type LoadedSites = SiteRecords;

// The rows as snapshotRowsQuery reads them: the columns and their names are declared in snapshot-columns.ts.

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

/** A row the snapshot cannot use (written with SQL, past the CLI's checks): left out, and reported. */
export interface UnusableRow {
  readonly table: 'sites' | 'api_keys' | 'allowlist_entries' | 'brownouts';
  /** The row's id, or for an allowlist entry its site and network. */
  readonly row: string;
  readonly reason: string;
}

/** Hears each row a load leaves out. */
export type UnusableRowListener = (row: UnusableRow) => void;

export const ignoreUnusable: UnusableRowListener = () => undefined;
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
          reason: `an IPv4-mapped network wider than ${IPV4_MAPPED.network}/${IPV4_MAPPED.prefix}, which would reach beyond IPv4`,
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

/** The four tables' rows of the sites `filter` selects, read in the transaction `client` has open. */
async function readSiteRows(client: pg.PoolClient, filter: SiteFilter, params: unknown[]): Promise<SiteRows> {
  const sites = await client.query<SiteCredentialsRow>(snapshotRowsQuery(snapshotTable('sites'), filter), params);
  const keys = await client.query<ActiveKeyHashRow>(snapshotRowsQuery(snapshotTable('api_keys'), filter), params);
  const allowlist = await client.query<AllowlistNetworkRow>(snapshotRowsQuery(snapshotTable('allowlist_entries'), filter), params);
  const tokenClients = await client.query<TokenClientRow>(snapshotRowsQuery(snapshotTable('token_clients'), filter), params);
  return [sites.rows, keys.rows, allowlist.rows, tokenClients.rows];
}

/** Runs `read` in one REPEATABLE READ transaction, so a key never appears without its site or allowlist. */
export async function inOneSnapshot<T>(pool: pg.Pool, read: (client: pg.PoolClient) => Promise<T>): Promise<T> {
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
/** `$1`: the site ids to read. */
export const namedSites: SiteFilter = (column) => `${column} = ANY($1::bigint[])`;

/** Every site (or the `wanted` ones), read run by run in the transaction `client` has open. */
export async function readAllSites(client: pg.PoolClient, onUnusable: UnusableRowListener, wanted?: ReadonlySet<SiteId>): Promise<LoadedSites> {
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
