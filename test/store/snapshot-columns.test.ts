import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bucketDigestsQuery, siteDigestsQuery, snapshotRowsQuery, SNAPSHOT_TABLES, type SnapshotTable } from '../../src/store/snapshot-columns.js';

const everySite = (column: string) => `${column} IS NOT NULL`;

/** The tables with `added` as one more column of `table`. */
function withColumn(table: SnapshotTable['table'], added: string): SnapshotTable[] {
  return SNAPSHOT_TABLES.map((declared) => (declared.table === table ? { ...declared, columns: [...declared.columns, { column: added, as: added }] } : declared));
}

describe('the snapshot columns', () => {
  it('reach the rows, the site digests and the bucket digests from the one list', () => {
    for (const table of SNAPSHOT_TABLES) {
      const tables = withColumn(table.table, 'added_column');
      const extended = tables.find((declared) => declared.table === table.table)!;
      assert.match(snapshotRowsQuery(extended, everySite), /, added_column AS added_column FROM /, `the rows of ${table.table}`);
      assert.doesNotMatch(snapshotRowsQuery(table, everySite), /added_column/);

      const digests = siteDigestsQuery(everySite, tables);
      assert.ok(digests.includes(`coalesce((added_column)::text, '-')`), `the site digest reads ${table.table}'s new column`);
      if (table.table !== 'sites') {
        const part = new RegExp(`${table.part} AS \\(\\s*SELECT site_id, string_agg\\([^\\n]*added_column[^\\n]*\\n\\s*FROM ${table.table} `);
        assert.match(digests, part, `in the part of ${table.table}`);
      }
      assert.doesNotMatch(siteDigestsQuery(everySite), /added_column/);

      const buckets = bucketDigestsQuery(tables);
      assert.match(buckets, new RegExp(`'${table.part}' AS part, bit_xor\\(hash_record_extended\\(\\(${table.siteColumn}, [^)]*, added_column\\), 0\\)\\) AS folded\\s+FROM ${table.table}\\b`));
      assert.doesNotMatch(bucketDigestsQuery(), /added_column/);
    }
  });

  it('reads the site id as text and selects the sites by the column that holds it', () => {
    assert.equal(
      snapshotRowsQuery(SNAPSHOT_TABLES.find((table) => table.table === 'api_keys')!, (column) => `${column} = $1`),
      "SELECT site_id::text AS site_id, encode(key_sha256, 'hex') AS hash, id::text AS id, (extract(epoch FROM expires_at) * 1000)::float8 AS expires_at_ms FROM api_keys WHERE revoked_at IS NULL AND site_id = $1",
    );
    assert.match(snapshotRowsQuery(SNAPSHOT_TABLES[0]!, (column) => `${column} = $1`), /^SELECT id::text AS id, .* FROM sites WHERE id = \$1$/);
  });

  it('names each table of a site once, sites first', () => {
    assert.deepEqual(SNAPSHOT_TABLES.map((table) => table.table), ['sites', 'api_keys', 'allowlist_entries', 'token_clients']);
    assert.equal(new Set(SNAPSHOT_TABLES.map((table) => table.part)).size, SNAPSHOT_TABLES.length);
  });
});
