import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHash } from 'node:crypto';
import { Slices } from '../../src/common/slices.js';
import { buildAllowlist } from '../../src/allowlist/allowlist.js';
import { SiteDigests, SiteDigestTable, type SiteDigest } from '../../src/store/site-digests.js';
import { SiteRecords } from '../../src/store/site-records.js';
import { siteKeys } from '../../src/store/site-keys.js';
import type { SiteResync } from '../../src/store/snapshot-resync.js';

/** An MD5 in hex, as the resync's queries give a digest. */
const md5 = (text: string) => createHash('md5').update(text).digest('hex');
const digest = (text: string): SiteDigest => ({ digest: md5(text), bucket: '0' });

/** A resync of bucket 0 that read site 1's digest as `resynced`, and read site 1 again when `changed`. */
function resyncOfSite1(resynced: string, changed: boolean): SiteResync {
  const siteDigests = new SiteDigestTable();
  siteDigests.set('1', md5(resynced));
  const records = new SiteRecords();
  if (changed) {
    records.set('1', {
      siteId: '1',
      enabled: true,
      graceUntil: null,
      keysByHash: siteKeys([]),
      allowlist: buildAllowlist([]),
      authMethod: 'both',
      tokensNotBefore: null,
      tokenClients: new Map(),
    });
  }
  return { bucketDigests: new Map([['0', 'bucket-after-resync']]), siteDigests, changed: records, removed: [] };
}

async function take(digests: SiteDigests, resync: SiteResync, reloaded: ReadonlyMap<string, SiteDigest | undefined>, kept: string[]): Promise<void> {
  await digests.takeResync(resync, new Slices());
  digests.settleReloads(resync, reloaded, kept);
}

/**
 * After a resync, each site's digest must describe the rows the table holds of it: the resync's read,
 * or a reload's that the table kept. A digest that describes other rows would let a later change
 * that brings those rows back go unseen.
 */
describe('SiteDigests after a resync during which site 1 was reloaded', () => {
  const cases: Array<[string, { resyncRead: boolean; reloadKept: boolean; reloadDigest: string | undefined }, string | undefined]> = [
    ['the table kept the newer reload: its digest', { resyncRead: true, reloadKept: true, reloadDigest: 'reload' }, 'reload'],
    ['the resync read the site after the older reload: the resync digest', { resyncRead: true, reloadKept: false, reloadDigest: 'reload' }, 'resync'],
    ['the resync found it unchanged, so the table holds the reload: its digest', { resyncRead: false, reloadKept: false, reloadDigest: 'reload' }, 'reload'],
    ['the reload knew no digest (site gone, or not applied): none, so it is read again', { resyncRead: false, reloadKept: false, reloadDigest: undefined }, undefined],
  ];
  for (const [name, { resyncRead, reloadKept, reloadDigest }, held] of cases) {
    it(name, async () => {
      const digests = new SiteDigests();
      await take(digests, resyncOfSite1('resync', resyncRead), new Map([['1', reloadDigest === undefined ? undefined : digest(reloadDigest)]]), reloadKept ? ['1'] : []);
      assert.equal(digests.sites.digestOf('1'), held && md5(held));
      // Whenever the reload's digest (or none) is held, the bucket's must be read again.
      assert.equal(digests.buckets.has('0'), held === 'resync');
    });
  }

  it('forgets the digest of a kept reload it has none for, and keeps the site listed in its bucket', async () => {
    const digests = new SiteDigests();
    await take(digests, resyncOfSite1('resync', true), new Map(), ['1']);
    assert.equal(digests.sites.digestOf('1'), undefined);
    assert.equal(digests.sites.matches('1', md5('resync')), false, 'the next resync would not read it again');
    assert.deepEqual([...digests.sites.sitesIn(new Set(['0']))], ['1'], 'the next resync would not see it deleted');
    assert.equal(digests.buckets.has('0'), false);
  });

  it('takes the resync as read when no site was reloaded meanwhile', async () => {
    const digests = new SiteDigests();
    await take(digests, resyncOfSite1('resync', true), new Map(), []);
    assert.equal(digests.sites.digestOf('1'), md5('resync'));
    assert.equal(digests.buckets.get('0'), 'bucket-after-resync');
  });
});
