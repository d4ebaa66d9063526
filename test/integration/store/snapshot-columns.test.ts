import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { bucketDigestsQuery, siteDigestsQuery, snapshotRowsQuery, SNAPSHOT_TABLES, type SnapshotTable } from '../../../src/store/snapshot-columns.js';
import { insertSite } from '../../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

const site1001 = (column: string) => `${column} = 1001`;
/** The declared tables, and the sites table reading its `name` too, as a column added to the list would. */
const WITH_NAME: SnapshotTable[] = SNAPSHOT_TABLES.map((table) => (table.table === 'sites' ? { ...table, columns: [...table.columns, { column: 'name', as: 'name' }] } : table));

describe('a column added to the snapshot columns', () => {
  let database: TestDatabase;
  let pool: pg.Pool;

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url });
    await insertSite(pool, { id: '1001', keys: [{ key: '11111111-1111-4111-8111-111111111111' }], cidrs: ['203.0.113.0/24'] });
    await pool.query("INSERT INTO token_clients (site_id, client_id) VALUES (1001, 'partner-1001')");
  });

  after(async () => {
    await pool?.end();
    await database?.drop();
  });

  /** What each of the three queries reads of site 1001 over `tables`. */
  async function read(tables: readonly SnapshotTable[]) {
    const rows = (await pool.query(snapshotRowsQuery(tables[0]!, site1001))).rows;
    const siteDigest = (await pool.query<{ digest: string }>(siteDigestsQuery(site1001, tables))).rows[0]?.digest;
    const bucketDigest = (await pool.query<{ digest: string }>(bucketDigestsQuery(tables))).rows[0]?.digest;
    return { rows, siteDigest, bucketDigest };
  }

  it('is read by the loader and changes both digests when it changes, and only then', async () => {
    const declared = await read(SNAPSHOT_TABLES);
    const named = await read(WITH_NAME);
    assert.deepEqual(named.rows, [{ ...declared.rows[0], name: '' }]);
    await pool.query("UPDATE sites SET name = 'Acme Travel' WHERE id = 1001");
    const renamed = await read(WITH_NAME);
    assert.equal(renamed.rows[0]?.name, 'Acme Travel');
    assert.notEqual(renamed.siteDigest, named.siteDigest, 'the site digest sees the new column change');
    assert.notEqual(renamed.bucketDigest, named.bucketDigest, 'the bucket digest sees the new column change');
    assert.deepEqual(await read(SNAPSHOT_TABLES), declared, 'a column the list does not declare is not read');
  });

  it('runs every query the list makes, each giving one digest per site and per bucket', async () => {
    for (const table of SNAPSHOT_TABLES) assert.equal((await pool.query(snapshotRowsQuery(table, site1001))).rows.length, 1, table.table);
    const { siteDigest, bucketDigest } = await read(SNAPSHOT_TABLES);
    assert.match(siteDigest ?? '', /^[0-9a-f]{32}$/);
    assert.match(bucketDigest ?? '', /^[0-9a-f]{32}$/);
  });
});
