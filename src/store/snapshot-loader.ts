import type pg from 'pg';
import { buildAllowlist } from '../allowlist/allowlist.js';
import type { Brownout, ClientId, KeyCredential, KeyHash, SiteAuthMethod, SiteCredentials, SiteId } from '../decision/types.js';

/** Sites by id: the plain data a CredentialSnapshot hands the decision. */
export type LoadedSites = Map<SiteId, SiteCredentials>;

/** What the decision needs of a site: whether it may authenticate at all, and its sunset grace. */
interface SiteCredentialsRow {
  id: string;
  enabled: boolean;
  grace_until_ms: number | null;
  auth_method: string;
  tokens_not_before_ms: number | null;
}
/** A token client as the decision matches it: by the token's client_id claim. */
interface TokenClientRow {
  site_id: string;
  client_id: ClientId;
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
const TOKEN_CLIENTS = 'SELECT site_id::text AS site_id, client_id FROM token_clients';
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

const NO_CLIENTS: ReadonlySet<ClientId> = new Set();

/** A method the schema does not know (a row written by hand) is read as the stricter one. */
function siteAuthMethod(value: string): SiteAuthMethod {
  return value === 'both' ? 'both' : 'tokens';
}

/**
 * Rows that would break the decision are left out, each reported: a key that cannot be matched is
 * refused (102), a site that cannot be built is unknown (101). One odd row never fails every check.
 */
function buildSites(
  sites: SiteCredentialsRow[],
  keys: ActiveKeyHashRow[],
  allowlist: AllowlistNetworkRow[],
  tokenClients: TokenClientRow[],
  onUnusable: UnusableRowListener,
): LoadedSites {
  const keysBySite = new Map<SiteId, Map<KeyHash, KeyCredential>>();
  for (const key of keys) {
    if (!HASH.test(key.hash) || Number.isNaN(key.expires_at_ms)) {
      onUnusable({ table: 'api_keys', row: key.id, reason: 'its hash or expiry cannot be read' });
      continue;
    }
    let siteKeys = keysBySite.get(key.site_id);
    if (siteKeys === undefined) keysBySite.set(key.site_id, (siteKeys = new Map()));
    siteKeys.set(key.hash, { keyId: key.id, expiresAt: key.expires_at_ms });
  }
  const entriesBySite = new Map<SiteId, AllowlistNetworkRow[]>();
  for (const entry of allowlist) {
    let entries = entriesBySite.get(entry.site_id);
    if (entries === undefined) entriesBySite.set(entry.site_id, (entries = []));
    entries.push(entry);
  }
  const clientsBySite = new Map<SiteId, Set<ClientId>>();
  for (const client of tokenClients) {
    let clients = clientsBySite.get(client.site_id);
    if (clients === undefined) clientsBySite.set(client.site_id, (clients = new Set()));
    clients.add(client.client_id);
  }
  const table: LoadedSites = new Map();
  for (const site of sites) {
    if (Number.isNaN(site.grace_until_ms) || typeof site.enabled !== 'boolean') {
      onUnusable({ table: 'sites', row: site.id, reason: 'its state or grace cannot be read; its requests get 101' });
      continue;
    }
    table.set(site.id, {
      siteId: site.id,
      enabled: site.enabled,
      graceUntil: site.grace_until_ms,
      keysByHash: keysBySite.get(site.id) ?? new Map(),
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
  }
  return table;
}

/** A condition on the column that holds the site id (`id` on sites, `site_id` on the others). */
type SiteFilter = (column: string) => string;

async function readConsistently(pool: pg.Pool, filter: SiteFilter, params: unknown[], onUnusable: UnusableRowListener): Promise<LoadedSites> {
  const client = await pool.connect();
  let rows: [SiteCredentialsRow[], ActiveKeyHashRow[], AllowlistNetworkRow[], TokenClientRow[]];
  try {
    // One snapshot of the four tables, so a key never appears without its site or allowlist.
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const sites = await client.query<SiteCredentialsRow>(`${SITES} WHERE ${filter('id')}`, params);
    const keys = await client.query<ActiveKeyHashRow>(`${KEYS} AND ${filter('site_id')}`, params);
    const allowlist = await client.query<AllowlistNetworkRow>(`${ALLOWLIST} WHERE ${filter('site_id')}`, params);
    const tokenClients = await client.query<TokenClientRow>(`${TOKEN_CLIENTS} WHERE ${filter('site_id')}`, params);
    await client.query('COMMIT');
    rows = [sites.rows, keys.rows, allowlist.rows, tokenClients.rows];
  } catch (error) {
    // Discarded, not rolled back: after a time-out the connection may still be busy with the query,
    // and a ROLLBACK would wait behind it. Closing the connection ends the transaction too.
    client.release(error instanceof Error ? error : true);
    throw error;
  }
  client.release();
  return buildSites(...rows, onUnusable);
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
  return readConsistently(pool, () => 'true', [], onUnusable);
}

/** The named sites; an id missing from the result no longer exists. */
export function loadSites(pool: pg.Pool, siteIds: readonly SiteId[], onUnusable: UnusableRowListener = ignoreUnusable): Promise<LoadedSites> {
  return readConsistently(pool, (column) => `${column} = ANY($1::bigint[])`, [siteIds], onUnusable);
}
