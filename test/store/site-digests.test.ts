import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SiteCredentials } from '../../src/decision/types.js';
import { SiteDigests, type SiteDigest } from '../../src/store/site-digests.js';
import type { SiteResync } from '../../src/store/snapshot-loader.js';

const site = {} as SiteCredentials;
const digest = (text: string): SiteDigest => ({ digest: text, bucket: '0' });

/** A resync of bucket 0 that read site 1's digest as `resynced`, and read site 1 again when `changed`. */
function resyncOfSite1(resynced: string, changed: boolean): SiteResync {
  return {
    bucketDigests: new Map([['0', 'bucket-after-resync']]),
    siteDigests: new Map([['1', digest(resynced)]]),
    changed: new Map(changed ? [['1', site]] : []),
    removed: [],
  };
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
    it(name, () => {
      const digests = new SiteDigests();
      digests.takeResync(resyncOfSite1('resync', resyncRead), new Map([['1', reloadDigest === undefined ? undefined : digest(reloadDigest)]]), reloadKept ? ['1'] : []);
      assert.equal(digests.digestOf('1'), held);
      // Whenever the reload's digest (or none) is held, the bucket's must be read again.
      assert.equal(digests.buckets.has('0'), held === 'resync');
    });
  }

  it('forgets a kept reload it has no digest for', () => {
    const digests = new SiteDigests();
    digests.takeResync(resyncOfSite1('resync', true), new Map(), ['1']);
    assert.equal(digests.digestOf('1'), undefined);
    assert.equal(digests.buckets.has('0'), false);
  });

  it('takes the resync as read when no site was reloaded meanwhile', () => {
    const digests = new SiteDigests();
    digests.takeResync(resyncOfSite1('resync', true), new Map(), []);
    assert.equal(digests.digestOf('1'), 'resync');
    assert.equal(digests.buckets.get('0'), 'bucket-after-resync');
  });
});
