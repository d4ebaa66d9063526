import { BUCKET_SPAN } from './site-digests.js';

// The loader's rows, each site's digest and each bucket's digest are all built from SNAPSHOT_TABLES, so
// that a column the snapshot reads is also one a resync sees change.

/** A condition on the column that holds the site id (`id` on sites, `site_id` on the others). */
export type SiteFilter = (column: string) => string;

const epochMs = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8`;

interface SnapshotColumn {
  readonly column: string;
  /** Its name in the loader's row. */
  readonly as: string;
  /** Default: the column. */
  readonly read?: string;
  /** Default: what the loader reads, as text; '-' for NULL. */
  readonly digestText?: string;
}

export interface SnapshotTable {
  readonly table: 'sites' | 'api_keys' | 'allowlist_entries' | 'token_clients';
  /** Names the table's part of a bucket's digest. */
  readonly part: string;
  /** Read as text, so that no site id near 2^63 loses digits. */
  readonly siteColumn: 'id' | 'site_id';
  /** Which of its rows the snapshot holds (none: all). */
  readonly holds?: string;
  readonly columns: readonly SnapshotColumn[];
  /** In a site's digest, what joins a row's columns, and what orders the site's rows of this table. */
  readonly digestJoin: string;
  readonly digestOrder?: string;
}

/** The sites table first: the others are a site's rows, joined to it by their site_id. */
export const SNAPSHOT_TABLES: readonly SnapshotTable[] = [
  {
    table: 'sites',
    part: 's',
    siteColumn: 'id',
    columns: [
      { column: 'enabled', as: 'enabled' },
      { column: 'apikey_grace_until', as: 'grace_until_ms', read: epochMs('apikey_grace_until') },
      { column: 'auth_method', as: 'auth_method' },
      { column: 'tokens_not_before', as: 'tokens_not_before_ms', read: epochMs('tokens_not_before') },
    ],
    digestJoin: '|',
  },
  {
    table: 'api_keys',
    part: 'k',
    siteColumn: 'site_id',
    // An unrevoked key, matched by the hex SHA-256 of the key, never the key.
    holds: 'revoked_at IS NULL',
    columns: [
      { column: 'key_sha256', as: 'hash', read: "encode(key_sha256, 'hex')" },
      { column: 'id', as: 'id', read: 'id::text' },
      { column: 'expires_at', as: 'expires_at_ms', read: epochMs('expires_at') },
    ],
    digestJoin: ':',
    digestOrder: 'id',
  },
  {
    table: 'allowlist_entries',
    part: 'n',
    siteColumn: 'site_id',
    columns: [
      { column: 'cidr', as: 'network', read: 'host(cidr)' },
      { column: 'cidr', as: 'prefix', read: 'masklen(cidr)' },
    ],
    digestJoin: '/',
    digestOrder: 'cidr',
  },
  {
    table: 'token_clients',
    part: 'c',
    siteColumn: 'site_id',
    // Its MD5 in the digest: a client id written by hand may hold the separators.
    columns: [
      { column: 'client_id', as: 'client_id', digestText: 'md5(client_id)' },
      { column: 'tokens_not_before', as: 'tokens_not_before_ms', read: epochMs('tokens_not_before') },
    ],
    digestJoin: ':',
    digestOrder: 'client_id',
  },
];

export function snapshotTable(name: SnapshotTable['table']): SnapshotTable {
  return SNAPSHOT_TABLES.find((table) => table.table === name)!;
}

const readOf = (column: SnapshotColumn) => column.read ?? column.column;
const digestTextOf = (column: SnapshotColumn) => column.digestText ?? `coalesce((${readOf(column)})::text, '-')`;
const where = (...conditions: Array<string | undefined>) => conditions.filter((condition) => condition !== undefined).join(' AND ');

export function snapshotRowsQuery(table: SnapshotTable, filter: SiteFilter): string {
  const columns = [`${table.siteColumn}::text AS ${table.siteColumn}`, ...table.columns.map((column) => `${readOf(column)} AS ${column.as}`)];
  return `SELECT ${columns.join(', ')} FROM ${table.table} WHERE ${where(table.holds, filter(table.siteColumn))}`;
}

/** Per site, the MD5 of all the snapshot holds of it; empty parts stay in place, so no two sites spell the same. */
export function siteDigestsQuery(filter: SiteFilter, tables: readonly SnapshotTable[] = SNAPSHOT_TABLES): string {
  const [sites, ...ofSite] = tables as [SnapshotTable, ...SnapshotTable[]];
  const rowText = (table: SnapshotTable) => table.columns.map(digestTextOf).join(` || '${table.digestJoin}' || `);
  const parts = ofSite.map(
    (table) => `${table.part} AS (
         SELECT site_id, string_agg(${rowText(table)}, ',' ORDER BY ${table.digestOrder}) AS digest_text
           FROM ${table.table} WHERE ${where(table.holds, filter('site_id'))} GROUP BY site_id)`,
  );
  const text = [rowText(sites), ...ofSite.map((table) => `coalesce(${table.part}.digest_text, '')`)].join(` || '${sites.digestJoin}' || `);
  const joins = ofSite.map((table) => `LEFT JOIN ${table.part} ON ${table.part}.site_id = s.id`).join(' ');
  return `
  WITH ${parts.join(',\n       ')}
  SELECT s.id, s.id / ${BUCKET_SPAN} AS bucket, md5(${text}) AS digest
    FROM ${sites.table} s ${joins}
   WHERE ${filter('s.id')}`;
}

/**
 * One row per bucket, each table's rows folded into the XOR of their hashes: no text made and nothing sorted,
 * a quarter of an MD5 per site. A changed bucket is then compared site by site.
 */
export function bucketDigestsQuery(tables: readonly SnapshotTable[] = SNAPSHOT_TABLES): string {
  const parts = tables.map((table) => {
    const hashed = [table.siteColumn, ...new Set(table.columns.map((column) => column.column))];
    return `SELECT ${table.siteColumn} / ${BUCKET_SPAN} AS bucket, '${table.part}' AS part, bit_xor(hash_record_extended((${hashed.join(', ')}), 0)) AS folded
      FROM ${table.table}${table.holds === undefined ? '' : ` WHERE ${table.holds}`} GROUP BY 1`;
  });
  return `
  SELECT bucket::text AS bucket, md5(string_agg(part || '=' || folded, ',' ORDER BY part)) AS digest FROM (
    ${parts.join('\n    UNION ALL\n    ')}
  ) parts GROUP BY bucket`;
}
