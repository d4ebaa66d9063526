import assert from 'node:assert/strict';
import { BlockList } from 'node:net';
import { describe, it } from 'node:test';
import type { SiteCredentials } from '../../src/decision/types.js';
import { SiteTable } from '../../src/store/site-table.js';

const site = (siteId: string, enabled = true): SiteCredentials => ({
  siteId,
  enabled,
  graceUntil: null,
  keysByHash: new Map(),
  allowlist: new BlockList(),
  authMethod: 'both',
  tokensNotBefore: null,
  tokenClients: new Set(),
});
const withKeys = (siteId: string, keys: number): SiteCredentials => ({
  ...site(siteId),
  keysByHash: new Map(Array.from({ length: keys }, (_, index) => [`hash-${siteId}-${index}`, { keyId: `${siteId}${index}`, expiresAt: null }])),
});
const table = (...sites: SiteCredentials[]) => new Map(sites.map((entry) => [entry.siteId, entry]));

/** Issue #8: loads may finish out of order, and the newer read must win. */
describe('site table', () => {
  it('keeps a site reloaded after a full load started when that full load finishes later', () => {
    const sites = new SiteTable();
    sites.replaceAll(table(site('1')), [], 1);
    // The revocation's reload (read at 3) lands first; the full load that began at 2 lands after it.
    sites.replaceSites(['1'], table(site('1', false)), 3);
    sites.replaceAll(table(site('1'), site('2')), [], 2);
    assert.equal(sites.site('1')?.enabled, false);
    assert.ok(sites.site('2'));
  });

  it('keeps a deletion that a later reload saw', () => {
    const sites = new SiteTable();
    sites.replaceAll(table(site('1')), [], 1);
    sites.replaceSites(['1'], new Map(), 3);
    sites.replaceAll(table(site('1')), [], 2);
    assert.equal(sites.site('1'), undefined);
  });

  it('lets a full load that started after a reload replace it', () => {
    const sites = new SiteTable();
    sites.replaceAll(table(site('1')), [], 1);
    sites.replaceSites(['1'], table(site('1', false)), 2);
    sites.replaceAll(table(site('1', true)), [], 3);
    assert.equal(sites.site('1')?.enabled, true);
  });

  it('drops a reload older than what it holds', () => {
    const sites = new SiteTable();
    sites.replaceAll(table(site('1', false)), [], 5);
    sites.replaceSites(['1'], table(site('1', true)), 4);
    assert.equal(sites.site('1')?.enabled, false);
    sites.replaceSites(['1'], table(site('1', true)), 7);
    sites.replaceSites(['1'], new Map(), 6);
    assert.equal(sites.site('1')?.enabled, true);
  });

  it('drops a full load older than the one it holds', () => {
    const sites = new SiteTable();
    sites.replaceAll(table(site('1')), [], 5);
    sites.replaceAll(table(site('2')), [], 4);
    assert.ok(sites.site('1'));
    assert.equal(sites.site('2'), undefined);
  });

  it('counts the keys of every site through full loads, reloads, deletions and dropped reloads', () => {
    const sites = new SiteTable();
    assert.equal(sites.activeKeys, 0);
    sites.replaceAll(table(withKeys('1', 2), withKeys('2', 3)), [], 1);
    assert.equal(sites.activeKeys, 5);
    sites.replaceSites(['1'], table(withKeys('1', 4)), 2);
    assert.equal(sites.activeKeys, 7);
    sites.replaceSites(['2'], new Map(), 3);
    assert.equal(sites.activeKeys, 4);
    sites.replaceSites(['1'], table(withKeys('1', 9)), 1);
    assert.equal(sites.activeKeys, 4, 'a reload older than what is held changes nothing');
    sites.replaceSites(['3'], table(withKeys('3', 1)), 4);
    assert.equal(sites.activeKeys, 5);
    // A full load read at 2.5 is newer than site 1's reload (2) and older than site 2's deletion (3)
    // and site 3's reload (4): site 1 from the load, site 2 still gone, site 3 kept.
    sites.replaceAll(table(withKeys('1', 1), withKeys('2', 1)), [], 2.5);
    assert.equal(sites.activeKeys, 1 + 1);
  });
});
