import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildAllowlist } from '../../src/allowlist/allowlist.js';
import { Slices } from '../../src/common/slices.js';
import type { SiteCredentials } from '../../src/decision/types.js';
import { SiteRecords } from '../../src/store/site-records.js';
import { SiteTable } from '../../src/store/site-table.js';

const site = (siteId: string, enabled = true): SiteCredentials => ({
  siteId,
  enabled,
  graceUntil: null,
  keysByHash: new Map(),
  allowlist: buildAllowlist([]),
  authMethod: 'both',
  tokensNotBefore: null,
  tokenClients: new Map(),
});
const withKeys = (siteId: string, keys: number): SiteCredentials => ({
  ...site(siteId),
  keysByHash: new Map(Array.from({ length: keys }, (_, index) => [`hash-${siteId}-${index}`, { keyId: `${siteId}${index}`, expiresAt: null }])),
});
/** The sites as a load hands them to the table: records, as the loader writes them. */
const records = (...sites: SiteCredentials[]) => {
  const held = new SiteRecords();
  for (const entry of sites) held.set(entry.siteId, entry);
  return held;
};

/** Slices that end after every site, and run `between` at the first break: what checks and reloads may do there. */
class EverySite extends Slices {
  constructor(private between: () => void) {
    super();
  }
  override get over(): boolean {
    return true;
  }
  override async next(): Promise<void> {
    this.between();
    this.between = () => undefined;
  }
}

/** Issue #8: loads may finish out of order, and the newer read must win. */
describe('site table', () => {
  it('keeps a site reloaded after a full load started when that full load finishes later', () => {
    const sites = new SiteTable();
    sites.replaceAll(records(site('1')), [], 1);
    // The revocation's reload (read at 3) lands first; the full load that began at 2 lands after it.
    sites.replaceSites(['1'], records(site('1', false)), 3);
    sites.replaceAll(records(site('1'), site('2')), [], 2);
    assert.equal(sites.site('1')?.enabled, false);
    assert.ok(sites.site('2'));
  });

  it('keeps a deletion that a later reload saw', () => {
    const sites = new SiteTable();
    sites.replaceAll(records(site('1')), [], 1);
    sites.replaceSites(['1'], records(), 3);
    sites.replaceAll(records(site('1')), [], 2);
    assert.equal(sites.site('1'), undefined);
  });

  it('lets a full load that started after a reload replace it', () => {
    const sites = new SiteTable();
    sites.replaceAll(records(site('1')), [], 1);
    sites.replaceSites(['1'], records(site('1', false)), 2);
    sites.replaceAll(records(site('1', true)), [], 3);
    assert.equal(sites.site('1')?.enabled, true);
  });

  it('drops a reload older than what it holds', () => {
    const sites = new SiteTable();
    sites.replaceAll(records(site('1', false)), [], 5);
    sites.replaceSites(['1'], records(site('1', true)), 4);
    assert.equal(sites.site('1')?.enabled, false);
    sites.replaceSites(['1'], records(site('1', true)), 7);
    sites.replaceSites(['1'], records(), 6);
    assert.equal(sites.site('1')?.enabled, true);
  });

  it('drops a full load older than the one it holds', () => {
    const sites = new SiteTable();
    sites.replaceAll(records(site('1')), [], 5);
    sites.replaceAll(records(site('2')), [], 4);
    assert.ok(sites.site('1'));
    assert.equal(sites.site('2'), undefined);
  });

  it('counts the keys of every site through full loads, reloads, deletions and dropped reloads', () => {
    const sites = new SiteTable();
    assert.equal(sites.activeKeys, 0);
    sites.replaceAll(records(withKeys('1', 2), withKeys('2', 3)), [], 1);
    assert.equal(sites.activeKeys, 5);
    sites.replaceSites(['1'], records(withKeys('1', 4)), 2);
    assert.equal(sites.activeKeys, 7);
    sites.replaceSites(['2'], records(), 3);
    assert.equal(sites.activeKeys, 4);
    sites.replaceSites(['1'], records(withKeys('1', 9)), 1);
    assert.equal(sites.activeKeys, 4, 'a reload older than what is held changes nothing');
    sites.replaceSites(['3'], records(withKeys('3', 1)), 4);
    assert.equal(sites.activeKeys, 5);
    // A full load read at 2.5 is newer than site 1's reload (2) and older than site 2's deletion (3)
    // and site 3's reload (4): site 1 from the load, site 2 still gone, site 3 kept.
    sites.replaceAll(records(withKeys('1', 1), withKeys('2', 1)), [], 2.5);
    assert.equal(sites.activeKeys, 1 + 1);
  });

  it('applies a resync in slices without undoing a reload that began after it and landed between them', async () => {
    const sites = new SiteTable();
    sites.replaceAll(records(withKeys('1', 1), withKeys('2', 1)), [], 1);
    const reloadOfSite2 = () => sites.replaceSites(['2'], records(withKeys('2', 3)), 6);
    assert.equal(await sites.applyResync(records(site('1', false), site('2', false)), [], [], 5, new EverySite(reloadOfSite2)), true);
    assert.equal(sites.site('1')?.enabled, false);
    assert.equal(sites.site('2')?.enabled, true, 'the resync undid the newer reload');
    assert.equal(sites.activeKeys, 0 + 3);
    assert.deepEqual(sites.newerReloads(5), ['2']);
  });

  it('drops a reload that began before a resync and landed between its slices', async () => {
    const sites = new SiteTable();
    sites.replaceAll(records(site('1'), site('2')), [], 1);
    const olderReload = () => assert.deepEqual(sites.replaceSites(['2'], records(), 4), []);
    await sites.applyResync(records(site('1', false), site('2', false)), [], [], 5, new EverySite(olderReload));
    assert.equal(sites.site('2')?.enabled, false);
    assert.deepEqual(sites.newerReloads(5), []);
  });

  it('applies no resync older than the full load it holds', async () => {
    const sites = new SiteTable();
    sites.replaceAll(records(site('1')), [], 5);
    assert.equal(await sites.applyResync(records(site('1', false)), ['1'], [], 4, new Slices()), false);
    assert.equal(sites.site('1')?.enabled, true);
  });

  it('keeps the token client index through a resync', async () => {
    const sites = new SiteTable();
    sites.replaceAll(records({ ...site('1'), tokenClients: new Map([['app-a', 0]]) }), [], 1);
    assert.equal(sites.siteOfTokenClient('app-a')?.siteId, '1');
    await sites.applyResync(records({ ...site('2'), tokenClients: new Map([['app-a', 0]]) }), ['1'], [], 2, new Slices());
    assert.equal(sites.siteOfTokenClient('app-a')?.siteId, '2');
    await sites.applyResync(records(), ['2'], [], 3, new Slices());
    assert.equal(sites.siteOfTokenClient('app-a'), undefined);
  });
});
