import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { hashApiKey } from '../../../src/decision/api-key.js';
import { decide } from '../../../src/decision/decide.js';
import type { CredentialSnapshot } from '../../../src/decision/types.js';
import { SiteTable } from '../../../src/store/site-table.js';
import { loadAllSites, loadSites } from '../../../src/store/snapshot-loader.js';
import { insertSite } from '../../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { NO_SUNSET } from '../../support/snapshot.js';

const ACTIVE = '11111111-1111-4111-8111-111111111111';
const SECOND = '22222222-2222-4222-8222-222222222222';
const REVOKED = '33333333-3333-4333-8333-333333333333';
const EXPIRING = '44444444-4444-4444-8444-444444444444';
const BIG_SITE = '9223372036854775807';

/** Whether the snapshot, as the decision reads it, lets a client of the site past the allowlist (103). */
function passesAllowlist(snapshot: CredentialSnapshot, siteId: string, clientAddress: string): boolean {
  const decision = decide(
    { authorization: `${siteId}:${ACTIVE}`, clientAddress, body: { kind: 'empty', lengthDeclared: false }, bodyPartial: false, bodyCredentials: 'optional' },
    snapshot,
    Date.now(),
    NO_SUNSET,
  );
  return decision.outcome === 'allow' || decision.denial.errorId !== 103;
}

describe('snapshot loader', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  const expiry = new Date('2027-01-01T00:00:00.123Z');

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url });
    await insertSite(pool, {
      id: '1001',
      keys: [{ key: ACTIVE }, { key: SECOND }, { key: REVOKED, revoked: true }, { key: EXPIRING, expiresAt: expiry }],
      cidrs: ['203.0.113.0/24', '2001:db8::/32', '::ffff:198.51.100.0/120', '192.0.2.1/32'],
    });
    await insertSite(pool, { id: '1002', enabled: false, keys: [{ key: '55555555-5555-4555-8555-555555555555' }] });
    await insertSite(pool, { id: BIG_SITE, cidrs: [] });
    // Written with plain SQL, as the CLI never stores them: IPv6 networks that contain ::ffff:0:0/96 ...
    await insertSite(pool, { id: '1003', cidrs: ['::/8', '::/80', '::/0', '::fffe:0:0/95'] });
    // ... and the IPv4-mapped range itself, which is the IPv4 network 0.0.0.0/0, as `ip allow` stores it.
    await insertSite(pool, { id: '1004', cidrs: ['::ffff:0:0/96'] });
  });

  after(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('loads every site with its active keys by hash, expiry and allowlist', async () => {
    const sites = await loadAllSites(pool);
    assert.deepEqual([...sites.keys()].sort(), ['1001', '1002', '1003', '1004', BIG_SITE]);
    const site = sites.get('1001');
    assert.ok(site);
    assert.equal(site.enabled, true);
    assert.deepEqual([...site.keysByHash.keys()].sort(), [ACTIVE, SECOND, EXPIRING].map(hashApiKey).sort());
    assert.equal(site.keysByHash.get(hashApiKey(ACTIVE))?.expiresAt, null);
    assert.equal(site.keysByHash.get(hashApiKey(EXPIRING))?.expiresAt, expiry.getTime());
    assert.equal(site.keysByHash.get(hashApiKey(REVOKED)), undefined, 'a revoked key is not loaded');
  });

  it('builds allowlists for IPv4, IPv6 and IPv4-mapped entries', async () => {
    const allowlist = (await loadAllSites(pool)).get('1001')?.allowlist;
    assert.ok(allowlist);
    const table: Array<[string, 'ipv4' | 'ipv6', boolean]> = [
      ['203.0.113.200', 'ipv4', true],
      ['203.0.114.1', 'ipv4', false],
      ['2001:db8:1::5', 'ipv6', true],
      ['2001:db9::5', 'ipv6', false],
      ['198.51.100.77', 'ipv4', true],
      ['198.51.101.77', 'ipv4', false],
      ['192.0.2.1', 'ipv4', true],
      ['192.0.2.2', 'ipv4', false],
    ];
    for (const [address, family, expected] of table) assert.equal(allowlist.check(address, family), expected, address);
  });

  it('checks IPv4 clients against IPv4 entries only, however the rows are stored', async () => {
    const snapshot = new SiteTable();
    snapshot.replaceAll(await loadAllSites(pool), [], Date.now());
    const table: Array<[string, string, boolean]> = [
      ['1003', '203.0.113.7', false],
      ['1003', '::ffff:203.0.113.7', false],
      ['1003', '0.0.0.1', false],
      ['1003', '2001:db8::1', true],
      ['1003', '::1', true],
      ['1004', '203.0.113.7', true],
      ['1004', '::ffff:203.0.113.7', true],
      ['1004', '2001:db8::1', false],
      ['1001', '::ffff:198.51.100.77', true],
      ['1001', '::ffff:203.0.113.200', true],
    ];
    for (const [siteId, address, expected] of table) {
      assert.equal(passesAllowlist(snapshot, siteId, address), expected, `${address} at site ${siteId}`);
    }
  });

  it('keeps a disabled site, an empty allowlist and a site id at the top of bigint', async () => {
    const sites = await loadAllSites(pool);
    assert.equal(sites.get('1002')?.enabled, false);
    assert.equal(sites.get(BIG_SITE)?.allowlist.check('203.0.113.1', 'ipv4'), false);
  });

  it('loads only the sites asked for, and leaves out those that no longer exist', async () => {
    const sites = await loadSites(pool, ['1002', '4242']);
    assert.deepEqual([...sites.keys()], ['1002']);
  });
});

describe('snapshot loader, a large installation', () => {
  const SITES = 4_500;
  let database: TestDatabase;
  let pool: pg.Pool;
  const keyHash = (siteId: number, n: number) => createHash('sha256').update(`key-${siteId}-${n}`).digest('hex');
  const networkOf = (siteId: number) => `10.${siteId >> 8}.${siteId & 255}`;

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url });
    await pool.query(`INSERT INTO sites (id) SELECT g FROM generate_series(1, $1::int) g`, [SITES]);
    await pool.query(
      `INSERT INTO api_keys (site_id, key_sha256, last_five)
       SELECT g, sha256(convert_to('key-' || g || '-' || n, 'UTF8')), 'abcde' FROM generate_series(1, $1::int) g, generate_series(1, 2) n`,
      [SITES],
    );
    await pool.query(`INSERT INTO allowlist_entries (site_id, cidr) SELECT g, ('10.' || (g >> 8) || '.' || (g & 255) || '.0/24')::cidr FROM generate_series(1, $1::int) g`, [SITES]);
  });

  after(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('loads every site whole, with its own keys and networks, on both sides of where one run of the read ends and the next begins', async () => {
    const sites = await loadAllSites(pool);
    assert.equal(sites.size, SITES);
    for (let siteId = 1; siteId <= SITES; siteId++) {
      const site = sites.get(String(siteId));
      assert.ok(site, `site ${siteId}`);
      assert.deepEqual([...site.keysByHash.keys()].sort(), [keyHash(siteId, 1), keyHash(siteId, 2)].sort(), `keys of site ${siteId}`);
      assert.equal(site.allowlist.check(`${networkOf(siteId)}.5`, 'ipv4'), true, `network of site ${siteId}`);
      assert.equal(site.allowlist.check(`${networkOf(siteId + 1)}.5`, 'ipv4'), false, `the next site's network, at site ${siteId}`);
    }
  });
});
