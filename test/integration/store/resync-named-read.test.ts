import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { Slices } from '../../../src/common/slices.js';
import { SiteDigests } from '../../../src/store/site-digests.js';
import { resyncSites } from '../../../src/store/snapshot-resync.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

const SITES = 1_000;
/** More than one run of named sites (200), and under a quarter of those held: read by name, not whole. */
const CHANGED = 230;

/** A resync that finds a few hundred sites changed reads them by name, run by run, in one transaction. */
describe('a resync that reads changed sites by name', () => {
  let database: TestDatabase;
  let pool: pg.Pool;

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    await pool.query('INSERT INTO sites (id, enabled) SELECT g, true FROM generate_series(1, $1::int) g', [SITES]);
    await pool.query("INSERT INTO allowlist_entries (site_id, cidr) SELECT g, '203.0.113.0/24' FROM generate_series(1, $1::int) g", [SITES]);
  });

  after(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('brings back every changed site, each with its digest, and no other', async () => {
    const held = new SiteDigests();
    await held.takeResync(await resyncSites(pool, held), new Slices());
    await pool.query('UPDATE sites SET enabled = false WHERE id <= $1', [CHANGED]);
    const resync = await resyncSites(pool, held);
    const changed = [...resync.changed.keys()].map(Number).sort((a, b) => a - b);
    assert.deepEqual(changed, Array.from({ length: CHANGED }, (_, i) => i + 1));
    for (const siteId of resync.changed.keys()) {
      assert.equal(resync.changed.get(siteId)?.enabled, false, `site ${siteId} read before its change`);
      assert.ok(resync.siteDigests.has(siteId), `site ${siteId} read without its digest`);
    }
    assert.deepEqual(resync.removed, []);
  });
});
