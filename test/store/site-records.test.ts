import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { buildAllowlist } from '../../src/allowlist/allowlist.js';
import type { SiteCredentials } from '../../src/decision/types.js';
import { bucketOf, SiteDigestTable } from '../../src/store/site-digests.js';
import { SiteIdIndex } from '../../src/store/site-id-index.js';
import { DECODED_SITES_MAX, SiteRecords } from '../../src/store/site-records.js';
import { siteKeys, type HashedKey } from '../../src/store/site-keys.js';

const hashOf = (text: string) => createHash('sha256').update(text).digest('hex');
const md5 = (text: string) => createHash('md5').update(text).digest('hex');

function site(siteId: string, overrides: Partial<SiteCredentials> & { keys?: HashedKey[] } = {}): SiteCredentials {
  const { keys = [{ hash: hashOf(siteId), keyId: `${siteId}0`, expiresAt: null }], ...fields } = overrides;
  return {
    siteId,
    enabled: true,
    graceUntil: null,
    keysByHash: siteKeys(keys),
    allowlist: buildAllowlist([{ network: '203.0.113.0', prefix: 24 }]),
    authMethod: 'both',
    tokensNotBefore: null,
    tokenClients: new Map(),
    ...fields,
  };
}

/** Everything the decision reads of a site, as plain values, to compare a decoded site with the one written. */
function facts(held: SiteCredentials | undefined, addresses: Array<[string, 'ipv4' | 'ipv6']> = [['203.0.113.9', 'ipv4']]) {
  if (held === undefined) return undefined;
  const keys = [...held.keysByHash.keys()].map((hash) => ({ hash, ...held.keysByHash.get(hash) }));
  return {
    siteId: held.siteId,
    enabled: held.enabled,
    graceUntil: held.graceUntil,
    tokensNotBefore: held.tokensNotBefore,
    authMethod: held.authMethod,
    keys,
    admits: addresses.map(([address, family]) => held.allowlist.check(address, family)),
    tokenClients: [...held.tokenClients],
  };
}

describe('SiteRecords', () => {
  it('gives back every field a site was written with, whatever text its ids hold', () => {
    const records = new SiteRecords();
    const addresses: Array<[string, 'ipv4' | 'ipv6']> = [
      ['203.0.113.9', 'ipv4'],
      ['198.51.100.1', 'ipv4'],
      ['2001:db8::5', 'ipv6'],
      ['2001:db9::5', 'ipv6'],
    ];
    const written = site('1001', {
      enabled: false,
      graceUntil: 1_800_000_000_000,
      tokensNotBefore: Number.POSITIVE_INFINITY,
      authMethod: 'tokens',
      keys: [
        { hash: hashOf('a'), keyId: '7', expiresAt: null },
        { hash: hashOf('b'), keyId: 'odd\u{1F511}\ud800', expiresAt: 1_700_000_000_123 },
        // Not a hash a stored key has (upper case): held as the text it is.
        { hash: hashOf('c').toUpperCase(), keyId: '9', expiresAt: null },
      ],
      allowlist: buildAllowlist([
        { network: '203.0.113.0', prefix: 24 },
        { network: '2001:db8::', prefix: 32 },
      ]),
      tokenClients: new Map([
        ['partner-app', 1_700_000_000_000],
        ['\udc00lone', Number.POSITIVE_INFINITY],
        ['', 0],
      ]),
    });
    records.set('1001', written);
    assert.deepEqual(facts(records.get('1001'), addresses), facts(written, addresses));
    assert.deepEqual(facts(records.get('1001'), addresses)?.admits, [true, false, true, false]);
    assert.equal(records.activeKeys, 3);
  });

  it('holds a site with more keys than a list searches, each found by its hash', () => {
    const records = new SiteRecords();
    const keys = Array.from({ length: 20 }, (_, index) => ({ hash: hashOf(`key ${index}`), keyId: String(index), expiresAt: index % 2 ? null : index }));
    records.set('5', site('5', { keys }));
    const held = records.get('5')!;
    for (const key of keys) {
      const found = held.keysByHash.get(key.hash);
      assert.deepEqual([found?.keyId, found?.expiresAt], [key.keyId, key.expiresAt]);
    }
    assert.equal(held.keysByHash.get(hashOf('another')), undefined);
    assert.equal(records.activeKeys, 20);
  });

  it('holds ids beyond 2^53, negative ids and zero (rows written by hand) apart from their neighbours', () => {
    const records = new SiteRecords();
    const ids = ['9223372036854775807', '9223372036854775806', '9007199254740993', '9007199254740992', '-5', '0', '1'];
    for (const siteId of ids) records.set(siteId, site(siteId));
    for (const siteId of ids) assert.equal(records.get(siteId)?.siteId, siteId);
    assert.deepEqual([...records.keys()].sort(), [...ids].sort());
    assert.equal(records.delete('9223372036854775807'), true);
    assert.equal(records.get('9223372036854775807'), undefined);
    assert.equal(records.get('9223372036854775806')?.siteId, '9223372036854775806');
    assert.equal(records.has('1.0'), false);
    assert.equal(records.get('01'), undefined);
    assert.equal(records.size, ids.length - 1);
  });

  it('keeps a decoded site for the next check, and decodes it again once it is written', () => {
    const records = new SiteRecords();
    records.set('1', site('1'));
    const first = records.get('1');
    assert.equal(records.get('1'), first);
    records.set('1', site('1', { enabled: false }));
    assert.equal(records.get('1')?.enabled, false);
  });

  it('keeps at most DECODED_SITES_MAX sites decoded, those read lately kept', () => {
    const records = new SiteRecords();
    for (let id = 1; id <= DECODED_SITES_MAX + 2; id++) records.set(String(id), site(String(id)));
    const first = records.get('1');
    const hot = records.get('2');
    for (let id = 3; id <= DECODED_SITES_MAX + 2; id++) {
      records.get(String(id));
      // Site 2 is read every so often, as a busy partner's is: it stays decoded.
      if (id % 1_000 === 0) assert.equal(records.get('2'), hot);
    }
    assert.equal(records.get('2'), hot, 'a site read lately was dropped');
    assert.notEqual(records.get('1'), first, 'site 1 stayed decoded past the bound');
    assert.deepEqual(facts(records.get('1')), facts(first));
  });

  it('decodes a site written again, whichever generation held it', () => {
    const records = new SiteRecords();
    for (let id = 1; id <= DECODED_SITES_MAX / 2 + 1; id++) records.set(String(id), site(String(id)));
    for (let id = 1; id <= DECODED_SITES_MAX / 2 + 1; id++) records.get(String(id));
    // Site 1 is in the earlier generation now, the last one in the recent.
    records.set('1', site('1', { enabled: false }));
    records.set(String(DECODED_SITES_MAX / 2 + 1), site(String(DECODED_SITES_MAX / 2 + 1), { enabled: false }));
    assert.equal(records.get('1')?.enabled, false);
    assert.equal(records.get(String(DECODED_SITES_MAX / 2 + 1))?.enabled, false);
  });

  it('reclaims the space of replaced and removed sites, every site still read as last written', () => {
    const records = new SiteRecords();
    const sites = 5_000;
    for (let round = 0; round < 20; round++) {
      for (let id = 1; id <= sites; id++) records.set(String(id), site(String(id), { graceUntil: round }));
    }
    for (let id = 1; id <= sites; id++) assert.equal(records.get(String(id))?.graceUntil, 19);
    const oneRound = records.bytesHeld;
    // One round's records are about a megabyte: twenty rounds written, a few chunks held.
    assert.ok(oneRound <= 6 * 2 ** 20, `${oneRound} bytes held for ${sites} sites`);
    for (let id = 1; id <= sites; id += 2) records.delete(String(id));
    for (let id = 1; id <= sites; id++) records.set(String(id + sites), site(String(id + sites)));
    for (let id = 2; id <= sites; id += 2) assert.equal(records.get(String(id))?.graceUntil, 19);
    assert.equal(records.get('1'), undefined);
    assert.equal(records.size, sites / 2 + sites);
    assert.equal(records.activeKeys, sites / 2 + sites);
  });

  it('holds a site larger than a chunk, and lets its space go when it is replaced', () => {
    const records = new SiteRecords();
    const huge = 'c'.repeat(700_000);
    records.set('1', site('1', { tokenClients: new Map([
      [huge, 1],
      ['small', 2],
    ]) }));
    records.set('2', site('2'));
    assert.deepEqual([...records.get('1')!.tokenClients], [
      [huge, 1],
      ['small', 2],
    ]);
    const withHuge = records.bytesHeld;
    records.set('1', site('1'));
    assert.ok(records.bytesHeld < withHuge, 'the large record stayed held');
    assert.equal(records.get('2')?.siteId, '2');
  });

  /** A site whose record is about `kib` KiB, made so by a token client of that size after `clients`. */
  const sized = (siteId: string, kib: number, clients: string[] = []) => site(siteId, { tokenClients: new Map([...clients, 'x'.repeat(kib * 512)].map((client) => [client, 0])) });

  it('never takes another site\'s record for a new entry\'s during a compaction (a site deleted and created again)', () => {
    const records = new SiteRecords();
    records.set('100', sized('100', 100));
    records.set('200', sized('200', 10));
    records.set('300', sized('300', 800));
    records.delete('300');
    records.delete('100');
    // The entries of 300 and 100 go to new sites; 100 comes back with an entry never used, while the
    // chunk holding its old record (first in the chunk) is compacted.
    records.set('400', sized('400', 1));
    records.set('500', sized('500', 1));
    records.set('100', sized('100', 200));
    for (let id = 101; id <= 120; id++) records.set(String(id), sized(String(id), 100));
    for (const siteId of ['200', '400', '500', '100', '109']) {
      assert.equal(records.get(siteId)?.siteId, siteId);
      assert.deepEqual(facts(records.get(siteId))?.keys, facts(site(siteId))?.keys, `site ${siteId}'s keys`);
    }
  });

  it('writes a record of most of a chunk whole after the compaction that made room for it', () => {
    const records = new SiteRecords();
    records.set('1', sized('1', 250));
    records.set('2', sized('2', 700));
    records.delete('2');
    const large = sized('3', 900, ['acme-mobile-app']);
    records.set('3', large);
    assert.deepEqual([...records.get('3')!.tokenClients], [...large.tokenClients]);
    records.set('3', sized('3', 900));
    assert.equal(records.get('1')?.siteId, '1');
  });

  it('reads every site as a Map holding the same writes would, through random writes, deletions and sizes', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      let state = seed;
      const random = (below: number) => {
        state = (Math.imul(state, 1103515245) + 12345) >>> 0;
        return state % below;
      };
      const records = new SiteRecords();
      const expected = new Map<string, SiteCredentials>();
      for (let step = 0; step < 3_000; step++) {
        const siteId = String(random(200));
        if (random(4) === 0) {
          assert.equal(records.delete(siteId), expected.delete(siteId));
          continue;
        }
        // Mostly small, sometimes a large part of a chunk or more than one.
        const kib = random(50) === 0 ? 300 + random(1_000) : random(8);
        const written = sized(siteId, kib);
        records.set(siteId, written);
        expected.set(siteId, written);
      }
      for (let id = 0; id < 200; id++) assert.deepEqual(facts(records.get(String(id))), facts(expected.get(String(id))), `seed ${seed}, site ${id}`);
      assert.equal(records.size, expected.size);
    }
  });

  it('copies a site from other records as it is, and counts its keys', () => {
    const source = new SiteRecords();
    source.set('3', site('3', { tokenClients: new Map([['app', 5]]) }));
    const target = new SiteRecords();
    assert.equal(target.copyFrom(source, '3'), true);
    assert.equal(target.copyFrom(source, '4'), false);
    assert.deepEqual(facts(target.get('3')), facts(source.get('3')));
    assert.deepEqual([...target.tokenClientsOf('3')], [['app', 5]]);
    assert.equal(target.activeKeys, 1);
    assert.deepEqual([...target.tokenClientsOf('4')], []);
  });
});

describe('SiteIdIndex', () => {
  it('finds every id after many are removed and the slots rehashed, and reuses the entries removed', () => {
    const index = new SiteIdIndex();
    for (let id = 0; id < 10_000; id++) index.add(String(id * 7));
    for (let id = 0; id < 10_000; id += 3) index.remove(String(id * 7));
    const end = index.entryLimit;
    for (let id = 10_000; id < 13_000; id++) index.add(String(id * 7));
    assert.ok(index.entryLimit <= end + 3, 'removed entries were not reused');
    for (let id = 0; id < 13_000; id++) assert.equal(index.entryOf(String(id * 7)) >= 0, id >= 10_000 || id % 3 !== 0, `id ${id * 7}`);
    for (const entry of index.entries()) assert.equal(index.entryOf(index.siteIdOf(entry)), entry);
    assert.equal([...index.entries()].length, index.size);
  });
});

describe('SiteDigestTable', () => {
  it('holds each site digest as written, across growth, and lists the sites of the buckets asked for', () => {
    const table = new SiteDigestTable();
    const ids = [...Array.from({ length: 2_000 }, (_, index) => String(index + 1)), '-300', '9223372036854775807'];
    for (const siteId of ids) table.set(siteId, md5(siteId));
    for (const siteId of ids) {
      assert.equal(table.matches(siteId, md5(siteId)), true, siteId);
      assert.equal(table.matches(siteId, md5(`${siteId}!`)), false);
    }
    assert.equal(table.digestOf('17'), md5('17'));
    assert.deepEqual([...table.sitesIn(new Set(['1', '-1', bucketOf('9223372036854775807')]))].sort(), [
      ...Array.from({ length: 256 }, (_, index) => String(index + 256)),
      '-300',
      '9223372036854775807',
    ].sort());
    table.delete('-300');
    assert.equal([...table.buckets()].includes('-1'), false);
    assert.equal([...table.buckets()].includes('0'), true);
  });

  it('holds a digest that is not an MD5 in hex as unknown: the site is read again, and stays listed in its bucket', () => {
    const table = new SiteDigestTable();
    table.set('1', md5('1'));
    table.set('1', 'not a digest');
    assert.equal(table.digestOf('1'), undefined);
    assert.equal(table.matches('1', md5('1')), false);
    assert.equal(table.matches('1', 'not a digest'), false);
    assert.deepEqual([...table.sitesIn(new Set(['0']))], ['1']);
  });

  it('matches no digest for a site whose digest is unknown, not even sixteen zero bytes', () => {
    const table = new SiteDigestTable();
    table.setUnknown('1');
    assert.equal(table.matches('1', '0'.repeat(32)), false);
    table.set('1', md5('1'));
    assert.equal(table.matches('1', md5('1')), true);
  });

  it('buckets ids as PostgreSQL divides them, toward zero', () => {
    assert.deepEqual(
      ['0', '255', '256', '-255', '-256', '-257', '9223372036854775807', '-9223372036854775808'].map(bucketOf),
      ['0', '0', '1', '0', '-1', '-1', '36028797018963967', '-36028797018963968'],
    );
  });
});
