import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { Slices } from '../../../src/common/slices.js';
import { SiteDigests } from '../../../src/store/site-digests.js';
import { resyncSites } from '../../../src/store/snapshot-resync.js';
import { insertSite } from '../../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

/**
 * A resync that reads rows whole (more than a quarter of the sites changed) must bring back only the
 * sites whose digest it read: a site it brings back without one is taken as read by the resync, and a
 * digest a reload left on it would stay on the resync's rows, so that a later change went unseen.
 */
describe('a resync that reads rows whole', () => {
  let database: TestDatabase;
  let pool: pg.Pool;

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    await insertSite(pool, { id: '1' });
  });

  after(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('brings back only the changed sites when the new ones outnumber those held', async () => {
    const digests = new SiteDigests();
    const first = await resyncSites(pool, digests);
    assert.deepEqual([...first.changed.keys()], ['1']);
    await digests.takeResync(first, new Slices());
    for (const id of ['1000', '1001', '1002', '1003']) await insertSite(pool, { id });
    const second = await resyncSites(pool, digests);
    assert.deepEqual([...second.changed.keys()].sort(), ['1000', '1001', '1002', '1003']);
    for (const siteId of second.changed.keys()) assert.ok(second.siteDigests.has(siteId), `site ${siteId} read without its digest`);
  });
});
