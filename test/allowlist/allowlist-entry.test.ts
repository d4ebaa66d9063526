import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { coversIpv4Mapped, parseAllowlistEntry } from '../../src/allowlist/allowlist-entry.js';

describe('parseAllowlistEntry', () => {
  const accepted: Array<[string, string]> = [
    ['203.0.113.0/24', '203.0.113.0/24'],
    ['203.0.113.7', '203.0.113.7/32'],
    ['203.0.113.7/32', '203.0.113.7/32'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['10.0.0.0/8', '10.0.0.0/8'],
    ['2001:db8::/32', '2001:db8::/32'],
    ['2001:DB8:0:0::/64', '2001:db8::/64'],
    ['2001:db8::1', '2001:db8::1/128'],
    ['::/0', '::/0'],
    ['::1', '::1/128'],
    ['fe80::/10', 'fe80::/10'],
    ['::ffff:203.0.113.0/120', '203.0.113.0/24'],
    ['::ffff:203.0.113.9', '203.0.113.9/32'],
    ['::ffff:cb00:7100/120', '203.0.113.0/24'],
    ['::ffff:0.0.0.0/96', '0.0.0.0/0'],
  ];
  for (const [text, cidr] of accepted) {
    it(`reads ${text} as ${cidr}`, () => {
      const parsed = parseAllowlistEntry(text);
      assert.ok(parsed.ok, parsed.ok ? '' : parsed.reason);
      assert.equal(parsed.entry.cidr, cidr);
    });
  }

  const refused: Array<[string, RegExp]> = [
    ['', /not an IP address or CIDR/],
    ['localhost', /not an IP address or CIDR/],
    ['203.0.113', /not an IP address or CIDR/],
    ['203.0.113.256/24', /not an IP address or CIDR/],
    ['203.0.113.0/', /prefix length ""/],
    ['203.0.113.0/33', /at most 32/],
    ['203.0.113.0/-1', /prefix length "-1"/],
    ['203.0.113.0/024', /prefix length "024"/],
    ['203.0.113.0/ 24', /prefix length " 24"/],
    ['203.0.113.0/24/8', /prefix length "24\/8"/],
    ['2001:db8::/129', /at most 128/],
    ['fe80::1%eth0/64', /not an IP address or CIDR/],
    ['203.0.113.7/24', /did you mean 203\.0\.113\.0\/24, or the single address 203\.0\.113\.7\?/],
    ['2001:db8::1/32', /did you mean 2001:db8::\/32/],
    ['::ffff:203.0.113.0/88', /IPv4-mapped range/],
    [' 203.0.113.0/24', /not an IP address or CIDR/],
  ];
  for (const [text, reason] of refused) {
    it(`refuses ${JSON.stringify(text)} and says why`, () => {
      const parsed = parseAllowlistEntry(text);
      assert.equal(parsed.ok, false);
      assert.match(parsed.ok ? '' : parsed.reason, reason);
    });
  }
});

describe('coversIpv4Mapped', () => {
  const table: Array<[string, boolean]> = [
    ['::/0', true],
    ['::/8', true],
    ['::/80', true],
    ['::8000:0:0/81', true],
    ['::fffe:0:0/95', true],
    ['::/81', false],
    ['::ffff:0:0:0/96', false],
    ['2001:db8::/32', false],
    ['64:ff9b::/96', false],
    ['::1', false],
    ['::ffff:0.0.0.0/96', false],
    ['0.0.0.0/0', false],
  ];
  for (const [text, covers] of table) {
    it(`${covers ? 'finds' : 'does not find'} ::ffff:0:0/96 inside ${text}`, () => {
      const parsed = parseAllowlistEntry(text);
      assert.ok(parsed.ok, parsed.ok ? '' : parsed.reason);
      assert.equal(coversIpv4Mapped(parsed.entry), covers);
    });
  }
});
