import assert from 'node:assert/strict';
import { BlockList } from 'node:net';
import { describe, it } from 'node:test';
import { NetworkList, packedIncludes } from '../../src/allowlist/network-list.js';
import { randomWords } from '../support/random-words.js';

function listOf(family: 'ipv4' | 'ipv6', cidrs: readonly string[]): NetworkList {
  const list = new NetworkList(family);
  for (const cidr of cidrs) {
    const [address = '', prefix = ''] = cidr.split('/');
    assert.ok(list.add(address, Number(prefix)), cidr);
  }
  return list;
}

describe('NetworkList', () => {
  const ipv4 = listOf('ipv4', ['203.0.113.0/24', '198.51.100.77/32', '10.0.0.0/8', '192.0.2.128/25']);
  const ipv4Table: Array<[string, boolean]> = [
    ['203.0.113.0', true],
    ['203.0.113.255', true],
    ['203.0.114.0', false],
    ['203.0.112.255', false],
    ['198.51.100.77', true],
    ['198.51.100.76', false],
    ['198.51.100.78', false],
    ['10.255.255.255', true],
    ['11.0.0.0', false],
    ['192.0.2.128', true],
    ['192.0.2.127', false],
    ['255.255.255.255', false],
    ['0.0.0.0', false],
  ];
  for (const [address, expected] of ipv4Table) {
    it(`IPv4 ${address} is ${expected ? 'inside' : 'outside'} the networks`, () => assert.equal(ipv4.includes(address), expected));
  }

  const ipv6 = listOf('ipv6', ['2001:db8:42::/48', '::1/128', 'fe80::/10', '2001:db8:0:0:1::/80', '::ffff:0:0/96']);
  const ipv6Table: Array<[string, boolean]> = [
    ['2001:db8:42::1', true],
    ['2001:db8:42:ffff:ffff:ffff:ffff:ffff', true],
    ['2001:db8:43::', false],
    ['::1', true],
    ['::2', false],
    ['::', false],
    ['fe80::1', true],
    ['febf:ffff::', true],
    ['fec0::', false],
    ['2001:db8::1:0:0:0', true],
    ['2001:db8::2:0:0:0', false],
    ['::ffff:1.2.3.4', true],
    ['0:0:0:0:0:ffff:102:304', true],
    ['::fffe:1.2.3.4', false],
  ];
  for (const [address, expected] of ipv6Table) {
    it(`IPv6 ${address} is ${expected ? 'inside' : 'outside'} the networks`, () => assert.equal(ipv6.includes(address), expected));
  }

  it('admits every address of its family with a /0, and none of the other family', () => {
    assert.equal(listOf('ipv4', ['0.0.0.0/0']).includes('255.255.255.255'), true);
    assert.equal(listOf('ipv6', ['::/0']).includes('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'), true);
    assert.equal(listOf('ipv4', ['0.0.0.0/0']).includes('::1'), false);
    assert.equal(listOf('ipv6', ['::/0']).includes('1.2.3.4'), false);
  });

  it('ignores host bits of a network, as a BlockList subnet does', () => {
    assert.equal(listOf('ipv4', ['203.0.113.77/24']).includes('203.0.113.1'), true);
    assert.equal(listOf('ipv6', ['2001:db8::77/64']).includes('2001:db8::1'), true);
  });

  it('answers the same packed, and takes more networks after', () => {
    const list = listOf('ipv4', ['203.0.113.0/24', '10.0.0.0/8']);
    const packed = list.packed();
    assert.equal(list.size, 2);
    for (const [address, expected] of [['203.0.113.255', true], ['203.0.114.0', false], ['10.255.255.255', true], ['11.0.0.0', false]] as const) {
      assert.equal(packedIncludes(packed, 'ipv4', address), expected, address);
    }
    assert.ok(list.add('198.51.100.77', 32));
    assert.equal(list.includes('198.51.100.77'), true);
    assert.equal(packedIncludes(packed, 'ipv4', '198.51.100.77'), false, 'a packed list is what it was when packed');
  });

  it('packs words with every bit pattern, the halves that are lone UTF-16 surrogates among them', () => {
    // 0xd800–0xdfff in either half of a word: a string holds them as they are.
    const cases = [
      ['216.0.0.0/8', '216.1.2.3', '217.0.0.0'],
      ['223.255.0.0/16', '223.255.216.1', '223.254.0.0'],
      ['255.255.255.255/32', '255.255.255.255', '255.255.255.254'],
      ['0.0.216.1/32', '0.0.216.1', '0.0.216.2'],
      ['128.0.0.0/1', '255.0.0.1', '127.255.255.255'],
    ] as const;
    for (const [cidr, inside, outside] of cases) {
      const packed = listOf('ipv4', [cidr]).packed();
      assert.equal(packedIncludes(packed, 'ipv4', inside), true, `${inside} in ${cidr}`);
      assert.equal(packedIncludes(packed, 'ipv4', outside), false, `${outside} not in ${cidr}`);
    }
    const v6 = listOf('ipv6', ['d800:dfff:ffff:d800::/64']);
    assert.equal(v6.includes('d800:dfff:ffff:d800:1::1'), true);
    assert.equal(v6.includes('d800:dfff:ffff:d801::1'), false);
  });

  it('packs a list longer than one String.fromCharCode call takes', () => {
    const list = new NetworkList('ipv6');
    for (let n = 0; n < 1_500; n++) assert.ok(list.add(`2001:db8:${n.toString(16)}::`, 48));
    const packed = list.packed();
    assert.equal(packed.length, 1_500 * 16);
    assert.equal(packedIncludes(packed, 'ipv6', '2001:db8:5db::7'), true);
    assert.equal(packedIncludes(packed, 'ipv6', '2001:db8:5dc::7'), false);
  });

  it('admits nobody while empty', () => {
    assert.equal(new NetworkList('ipv4').includes('203.0.113.7'), false);
    assert.equal(new NetworkList('ipv6').includes('::1'), false);
    assert.equal(new NetworkList('ipv4').packed(), '');
  });

  const notAddresses: Array<['ipv4' | 'ipv6', string]> = [
    ['ipv4', ''],
    ['ipv4', '203.0.113'],
    ['ipv4', '203.0.113.7.1'],
    ['ipv4', '203.0.113.256'],
    ['ipv4', '203.0.113.07'],
    ['ipv4', '203.0.113.1000'],
    ['ipv4', '203.0.113.'],
    ['ipv4', ' 203.0.113.7'],
    ['ipv4', '203.0.113.7 '],
    ['ipv4', '::ffff:203.0.113.7'],
    ['ipv6', ''],
    ['ipv6', ':'],
    ['ipv6', ':::'],
    ['ipv6', '1::2::3'],
    ['ipv6', '1:2:3:4:5:6:7'],
    ['ipv6', '1:2:3:4:5:6:7:8:9'],
    ['ipv6', '1:2:3:4:5:6:7::8'],
    ['ipv6', '12345::'],
    ['ipv6', 'g::'],
    ['ipv6', '1:'],
    ['ipv6', ':1'],
    ['ipv6', 'fe80::1%eth0'],
    ['ipv6', '::1.2.3'],
    ['ipv6', '1.2.3.4::'],
    ['ipv6', '1:2:3:4:5:6:7:1.2.3.4'],
    ['ipv6', '203.0.113.7'],
  ];
  for (const [family, text] of notAddresses) {
    it(`refuses "${text}" as an ${family} address and network`, () => {
      const everything = listOf(family, [family === 'ipv4' ? '0.0.0.0/0' : '::/0']);
      assert.equal(everything.includes(text), false);
      assert.equal(new NetworkList(family).add(text, 0), false);
    });
  }

  it('refuses a prefix longer than the family allows', () => {
    assert.equal(new NetworkList('ipv4').add('10.0.0.0', 33), false);
    assert.equal(new NetworkList('ipv6').add('::', 129), false);
    assert.equal(new NetworkList('ipv4').add('10.0.0.0', -1), false);
  });
});

function ipv4Text(word: number): string {
  return [24, 16, 8, 0].map((shift) => (word >>> shift) & 255).join('.');
}

/** Eight groups, some runs zeroed so that `::` and the URL parser's compressed form get exercised. */
function ipv6Text(next: () => number, near?: readonly number[]): number[] {
  const groups = near ? [...near] : Array.from({ length: 8 }, () => next() & 0xffff);
  if (next() % 3 === 0) {
    const from = next() % 8;
    const to = Math.min(8, from + 1 + (next() % 4));
    for (let g = from; g < to; g++) groups[g] = 0;
  }
  // A few changes to a network's groups, to land just inside or just outside it.
  if (near) {
    for (let flips = next() % 3; flips > 0; flips--) {
      const group = next() % 8;
      groups[group] = (groups[group] ?? 0) ^ (1 << next() % 16);
    }
  }
  return groups;
}

describe('NetworkList answers as a BlockList of subnets does (random networks and addresses)', () => {
  it('IPv4', () => {
    const next = randomWords(14);
    for (let round = 0; round < 200; round++) {
      const ours = new NetworkList('ipv4');
      const theirs = new BlockList();
      const networks: number[] = [];
      for (let n = next() % 6; n > 0; n--) {
        const network = next();
        const prefix = next() % 33;
        networks.push(network);
        assert.ok(ours.add(ipv4Text(network), prefix));
        theirs.addSubnet(ipv4Text(network), prefix, 'ipv4');
      }
      for (let a = 0; a < 50; a++) {
        const near = networks[a % Math.max(1, networks.length)];
        const address = near !== undefined && a % 2 === 0 ? (near ^ (1 << next() % 32)) >>> 0 : next();
        const text = ipv4Text(address);
        assert.equal(ours.includes(text), theirs.check(text, 'ipv4'), `round ${round}: ${text}`);
      }
    }
  });

  it('IPv6, compressed and uncompressed', () => {
    const next = randomWords(6);
    for (let round = 0; round < 200; round++) {
      const ours = new NetworkList('ipv6');
      const theirs = new BlockList();
      const networks: number[][] = [];
      for (let n = next() % 6; n > 0; n--) {
        const groups = ipv6Text(next);
        const prefix = next() % 129;
        networks.push(groups);
        const text = groups.map((g) => g.toString(16)).join(':');
        assert.ok(ours.add(text, prefix), text);
        theirs.addSubnet(text, prefix, 'ipv6');
      }
      for (let a = 0; a < 50; a++) {
        const groups = ipv6Text(next, a % 2 === 0 ? networks[a % Math.max(1, networks.length)] : undefined);
        const full = groups.map((g) => g.toString(16)).join(':');
        const compressed = new URL(`http://[${full}]/`).hostname.slice(1, -1);
        for (const text of [full, compressed]) {
          assert.equal(ours.includes(text), theirs.check(text, 'ipv6'), `round ${round}: ${text}`);
        }
      }
    }
  });
});
