import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decide } from '../../src/decision/decide.js';
import { denialBody, denialMessage, ERROR_CATALOGUE } from '../../src/decision/error-catalogue.js';
import type { BodyView, CheckInput, Decision, SunsetPolicy } from '../../src/decision/types.js';
import { NO_SUNSET, snapshotOf } from '../support/snapshot.js';

const NOW = Date.parse('2026-11-22T12:00:00Z');
const KEY = '3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b';
const ROTATED_KEY = 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d';
const EXPIRED_KEY = 'deadbeef-0000-4000-8000-000000000001';
const EXPIRING_KEY = 'deadbeef-0000-4000-8000-000000000002';
const OTHER_SITE_KEY = '0badc0de-1111-4222-8333-444455556666';
const MAX_SITE = '9223372036854775807';
const MAX_SITE_KEY = 'ffffffff-ffff-4fff-bfff-ffffffffffff';
const UNKNOWN_KEY = '00000000-0000-4000-8000-00000000abcd';
const IPV6_ONLY_KEY = '6a6b6c6d-0000-4000-8000-000000000006';

const snapshot = snapshotOf([
  {
    siteId: '1001',
    cidrs: ['203.0.113.0/24', '2001:db8::/32'],
    keys: [
      { key: KEY, keyId: '11' },
      { key: ROTATED_KEY, keyId: '12' },
      { key: EXPIRED_KEY, keyId: '13', expiresAt: NOW - 1 },
      { key: EXPIRING_KEY, keyId: '14', expiresAt: NOW + 60_000 },
    ],
  },
  { siteId: '1002', enabled: false, cidrs: ['0.0.0.0/0'], keys: [{ key: KEY.replace('3f2b', '3f2c'), keyId: '21' }] },
  { siteId: '1003', cidrs: [], keys: [{ key: KEY.replace('3f2b', '3f2d'), keyId: '31' }] },
  { siteId: '2002', cidrs: ['198.51.100.0/24'], keys: [{ key: OTHER_SITE_KEY, keyId: '41' }] },
  // IPv6 networks that each contain the IPv4-mapped range ::ffff:0:0/96, and nothing else.
  { siteId: '1004', cidrs: ['::/8', '::/80', '::/0', '::fffe:0:0/95'], keys: [{ key: IPV6_ONLY_KEY, keyId: '61' }] },
  { siteId: MAX_SITE, cidrs: ['0.0.0.0/0'], keys: [{ key: MAX_SITE_KEY, keyId: '51' }] },
]);

const json = (value: unknown): BodyView => ({ kind: 'text', text: JSON.stringify(value) });
const text = (value: string): BodyView => ({ kind: 'text', text: value });
const credentials = (siteId: string | number, apikey: string): BodyView => json({ siteid: siteId, apikey });

function input(overrides: Partial<CheckInput> = {}): CheckInput {
  return {
    authorization: `1001:${KEY}`,
    clientAddress: '203.0.113.7',
    body: credentials(1001, KEY),
    bodyPartial: false,
    bodyCredentials: 'required',
    ...overrides,
  };
}

type Expected = 'allow' | 108 | 101 | 103 | 102 | 104;
interface Case {
  readonly name: string;
  readonly input: CheckInput;
  readonly expect: Expected;
  /** The exact partner-facing message, where the case pins one. */
  readonly message?: string;
  /** The rule recorded for 108 and 104 denials. */
  readonly rule?: string;
  readonly keyId?: string;
}

const HEADER_MESSAGE = 'Site ID or API key is invalid or missing in the header';
const header = (authorization: string | undefined, rule?: string): Case => ({
  name: `Authorization ${JSON.stringify(authorization)?.slice(0, 60)}`,
  input: input({ authorization }),
  expect: 108,
  message: HEADER_MESSAGE,
  ...(rule ? { rule } : {}),
});

const headerCases: Case[] = [
  header(undefined, 'header-missing'),
  header('', 'header-missing'),
  header(' ', 'header-malformed'),
  header('\t', 'header-malformed'),
  header(` 1001:${KEY}`, 'site-id-invalid'),
  header(`1001:${KEY} `, 'api-key-invalid'),
  header(`1001: ${KEY}`, 'api-key-invalid'),
  header(`1001 :${KEY}`, 'site-id-invalid'),
  header(`1001:\t${KEY}`, 'api-key-invalid'),
  header(`1001${KEY}`, 'header-malformed'),
  header(':', 'site-id-invalid'),
  header(`:${KEY}`, 'site-id-invalid'),
  header('1001:', 'api-key-invalid'),
  header(`1001:${KEY}:`, 'header-malformed'),
  header(`1001::${KEY}`, 'header-malformed'),
  header(`1001:urn:uuid:${KEY}`, 'header-malformed'),
  header(`Basic ${Buffer.from(`1001:${KEY}`).toString('base64')}`, 'header-malformed'),
  header(`Bearer: 1001:${KEY}`, 'header-malformed'),
  header(`Bearer\t1001:${KEY}`, 'site-id-invalid'),
  header(`+1001:${KEY}`, 'site-id-invalid'),
  header(`-1001:${KEY}`, 'site-id-invalid'),
  header(`01001:${KEY}`, 'site-id-invalid'),
  header(`0:${KEY}`, 'site-id-invalid'),
  header(`9223372036854775808:${KEY}`, 'site-id-invalid'),
  header(`18446744073709551616:${KEY}`, 'site-id-invalid'),
  header(`1001.0:${KEY}`, 'site-id-invalid'),
  header(`1e3:${KEY}`, 'site-id-invalid'),
  header(`0x3e9:${KEY}`, 'site-id-invalid'),
  header(`١٠٠١:${KEY}`, 'site-id-invalid'),
  header(`１００１:${KEY}`, 'site-id-invalid'),
  header(`1001:${KEY.replaceAll('-', '')}`, 'api-key-invalid'),
  header(`1001:{${KEY}}`, 'api-key-invalid'),
  header(`1001:${KEY.replace('3f2b', '3g2b')}`, 'api-key-invalid'),
  header(`1001:${KEY.slice(0, -1)}`, 'api-key-invalid'),
  header(`1001:${KEY}0`, 'api-key-invalid'),
  header(`1001:${KEY.replace('-', '\u2010')}`, 'api-key-invalid'),
  header(`1001:${KEY}\n`, 'api-key-invalid'),
  header(`1001:${KEY.replace('3f', '3\u0000')}`, 'api-key-invalid'),
  header(`1001:${KEY},1001:${KEY}`, 'header-malformed'),
  header('x'.repeat(1 << 20), 'header-malformed'),
  header(`${'9'.repeat(1 << 20)}:${KEY}`, 'site-id-invalid'),
  header(`1001:${'a'.repeat(1 << 20)}`, 'api-key-invalid'),
  header(`1001:${KEY.replace('-4e6f-', '-4e6f-\u0301')}`, 'api-key-invalid'),
];

const siteCases: Case[] = [
  { name: 'unknown site', input: input({ authorization: `4242:${KEY}` }), expect: 101, message: 'Site ID 4242 is invalid' },
  { name: 'disabled site', input: input({ authorization: `1002:${KEY.replace('3f2b', '3f2c')}` }), expect: 101, message: 'Site ID 1002 is invalid' },
  {
    name: 'largest bigint site id that is not registered',
    input: input({ authorization: `9223372036854775806:${KEY}` }),
    expect: 101,
    message: 'Site ID 9223372036854775806 is invalid',
  },
  {
    name: 'largest bigint site id that is registered',
    input: input({
      authorization: `${MAX_SITE}:${MAX_SITE_KEY}`,
      body: text(`{"siteid":${MAX_SITE},"apikey":"${MAX_SITE_KEY}"}`),
    }),
    expect: 'allow',
    keyId: '51',
  },
];

const ipCases: Case[] = [
  {
    name: 'IPv4 outside the allowlist',
    input: input({ clientAddress: '198.51.100.7' }),
    expect: 103,
    message: 'IP address 198.51.100.7 is not whitelisted for site ID 1001',
  },
  {
    name: 'a site with no allowlist entry admits nobody',
    input: input({ authorization: `1003:${KEY.replace('3f2b', '3f2d')}`, body: credentials(1003, KEY.replace('3f2b', '3f2d')) }),
    expect: 103,
    message: 'IP address 203.0.113.7 is not whitelisted for site ID 1003',
  },
  { name: 'no client address', input: input({ clientAddress: undefined }), expect: 103, message: 'IP address unknown is not whitelisted for site ID 1001' },
  { name: 'client address that is not an IP', input: input({ clientAddress: 'not-an-ip' }), expect: 103, message: 'IP address unknown is not whitelisted for site ID 1001' },
  { name: 'client address with a port', input: input({ clientAddress: '203.0.113.7:443' }), expect: 103 },
  { name: 'IPv4 with a leading zero', input: input({ clientAddress: '203.0.113.07' }), expect: 103 },
  { name: 'IPv6 with a zone id', input: input({ clientAddress: 'fe80::1%eth0' }), expect: 103 },
  { name: 'IPv6 inside the allowlist', input: input({ clientAddress: '2001:db8::1' }), expect: 'allow' },
  { name: 'IPv6 in upper case inside the allowlist', input: input({ clientAddress: '2001:DB8:0:0::1' }), expect: 'allow' },
  {
    name: 'IPv6 outside the allowlist',
    input: input({ clientAddress: '2001:DB9::0001' }),
    expect: 103,
    message: 'IP address 2001:db9::1 is not whitelisted for site ID 1001',
  },
  { name: 'IPv4-mapped IPv6 counts as the IPv4 address', input: input({ clientAddress: '::ffff:203.0.113.7' }), expect: 'allow' },
  { name: 'IPv4-mapped IPv6 in hex form', input: input({ clientAddress: '::ffff:cb00:7107' }), expect: 'allow' },
  {
    name: 'IPv4-mapped IPv6 outside the allowlist is reported as IPv4',
    input: input({ clientAddress: '::FFFF:198.51.100.7' }),
    expect: 103,
    message: 'IP address 198.51.100.7 is not whitelisted for site ID 1001',
  },
  { name: 'a 1 MiB client address', input: input({ clientAddress: '1'.repeat(1 << 20) }), expect: 103 },
  ...['203.0.113.7', '::ffff:203.0.113.7', '::ffff:cb00:7107'].map(
    (clientAddress): Case => ({
      name: `IPv4 client ${clientAddress} is not admitted by IPv6 entries that cover ::ffff:0:0/96`,
      input: input({ authorization: `1004:${IPV6_ONLY_KEY}`, clientAddress, body: credentials(1004, IPV6_ONLY_KEY) }),
      expect: 103,
      message: 'IP address 203.0.113.7 is not whitelisted for site ID 1004',
    }),
  ),
  {
    name: 'IPv6 client inside IPv6 entries that cover ::ffff:0:0/96',
    input: input({ authorization: `1004:${IPV6_ONLY_KEY}`, clientAddress: '2001:db8::7', body: credentials(1004, IPV6_ONLY_KEY) }),
    expect: 'allow',
    keyId: '61',
  },
];

const keyCases: Case[] = [
  {
    name: 'unknown key is masked to its last five characters',
    input: input({ authorization: `1001:${UNKNOWN_KEY}`, body: credentials(1001, UNKNOWN_KEY) }),
    expect: 102,
    message: 'API key *****0abcd is invalid',
  },
  {
    name: 'unknown upper-case key is masked as submitted',
    input: input({ authorization: `1001:${UNKNOWN_KEY.toUpperCase()}` }),
    expect: 102,
    message: 'API key *****0ABCD is invalid',
  },
  { name: 'expired key', input: input({ authorization: `1001:${EXPIRED_KEY}`, body: credentials(1001, EXPIRED_KEY) }), expect: 102 },
  {
    name: 'key that expires later is still good',
    input: input({ authorization: `1001:${EXPIRING_KEY}`, body: credentials(1001, EXPIRING_KEY) }),
    expect: 'allow',
    keyId: '14',
  },
  {
    name: 'key of another site',
    input: input({ authorization: `1001:${OTHER_SITE_KEY}`, body: credentials(1001, OTHER_SITE_KEY) }),
    expect: 102,
    message: 'API key *****56666 is invalid',
  },
  { name: 'key in upper case is the same key', input: input({ authorization: `1001:${KEY.toUpperCase()}` }), expect: 'allow', keyId: '11' },
  {
    name: 'second active key of a site (rotation)',
    input: input({ authorization: `1001:${ROTATED_KEY}`, body: credentials(1001, ROTATED_KEY) }),
    expect: 'allow',
    keyId: '12',
  },
];

const body = (name: string, view: BodyView, rule: string | 'allow', overrides: Partial<CheckInput> = {}): Case => ({
  name,
  input: input({ body: view, ...overrides }),
  ...(rule === 'allow' ? { expect: 'allow' as const } : { expect: 104 as const, rule }),
});

const deeplyNested = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
const tooLarge: BodyView = { kind: 'too-large', bytes: 1_048_577, maxBytes: 1_048_576 };
const bodyCases: Case[] = [
  body('numeric siteid', credentials(1001, KEY), 'allow'),
  body('string siteid', credentials('1001', KEY), 'allow'),
  body('upper-case apikey in the body', credentials(1001, KEY.toUpperCase()), 'allow'),
  body('apikey written with unicode escapes', text(`{"siteid":1001,"apikey":"\\u0033${KEY.slice(1)}"}`), 'allow'),
  body('siteid string written with a unicode escape', text(`{"siteid":"\\u0031001","apikey":"${KEY}"}`), 'allow'),
  body('siteid string longer than the id', credentials('10010', KEY), 'siteid-mismatch'),
  body('apikey with a full-width digit in place of an ASCII one', credentials(1001, `\uff10${KEY.slice(1)}`), 'apikey-mismatch'),
  body('apikey with a character that lower-cases to two', credentials(1001, `${KEY.slice(0, -1)}\u0130`), 'apikey-mismatch'),
  body('other members before and after', json({ order: { items: [1, { siteid: 9 }] }, siteid: 1001, apikey: KEY, note: '}"{' }), 'allow'),
  body('whitespace between tokens', text(`\n{ "siteid" :\t1001 ,\r\n "apikey" : "${KEY}" }\n`), 'allow'),
  body('1 MiB body with correct credentials', json({ padding: 'x'.repeat(1 << 20), siteid: 1001, apikey: KEY }), 'allow'),
  body('deeply nested member before the credentials', text(`{"a":${deeplyNested},"siteid":1001,"apikey":"${KEY}"}`), 'allow'),
  body('empty body on a route that requires body credentials', { kind: 'empty', lengthDeclared: false }, 'body-missing'),
  body('empty body on a route where body credentials are optional', { kind: 'empty', lengthDeclared: false }, 'allow', {
    bodyCredentials: 'optional',
  }),
  body('a present body is checked even where body credentials are optional', credentials(1001, ROTATED_KEY), 'apikey-mismatch', {
    bodyCredentials: 'optional',
  }),
  body('empty body although a length was declared', { kind: 'empty', lengthDeclared: true }, 'body-not-forwarded'),
  body('empty body with a declared length, optional route', { kind: 'empty', lengthDeclared: true }, 'body-not-forwarded', {
    bodyCredentials: 'optional',
  }),
  body('body marked partial by Envoy', credentials(1001, KEY), 'body-partial', { bodyPartial: true }),
  {
    name: 'body larger than MAX_BODY_BYTES',
    input: input({ body: tooLarge }),
    expect: 104,
    rule: 'body-too-large',
    message: 'Request body is larger than the authorization service accepts (1048576 bytes), so siteid and apikey cannot be verified',
  },
  body('body larger than MAX_BODY_BYTES on a route where body credentials are optional', tooLarge, 'body-too-large', {
    bodyCredentials: 'optional',
  }),
  body('body that is not UTF-8', { kind: 'not-utf8' }, 'body-not-utf8'),
  body('form-encoded body', text(`siteid=1001&apikey=${KEY}`), 'body-not-json'),
  body('whitespace-only body', text('   '), 'body-not-json'),
  body('body with a byte-order mark', text(`\ufeff${JSON.stringify({ siteid: 1001, apikey: KEY })}`), 'body-not-json'),
  body('JSON followed by garbage', text(`${JSON.stringify({ siteid: 1001, apikey: KEY })} x`), 'body-not-json'),
  body('unterminated deep nesting', text('['.repeat(100_000)), 'body-not-json'),
  body('array body', json([{ siteid: 1001, apikey: KEY }]), 'body-not-object'),
  body('null body', text('null'), 'body-not-object'),
  body('string body', text('"1001"'), 'body-not-object'),
  body('credentials nested one level down', json({ data: { siteid: 1001, apikey: KEY } }), 'siteid-missing'),
  body('credentials under __proto__', text(`{"__proto__":{"siteid":1001},"apikey":"${KEY}"}`), 'siteid-missing'),
  body('siteid in another case only', json({ SITEID: 1001, apikey: KEY }), 'siteid-missing'),
  body('apikey missing', json({ siteid: 1001 }), 'apikey-missing'),
  body('siteid 1e3-style exponent', text(`{"siteid":1.001e3,"apikey":"${KEY}"}`), 'siteid-mismatch'),
  body('siteid 1001e0', text(`{"siteid":1001e0,"apikey":"${KEY}"}`), 'siteid-mismatch'),
  body('siteid 1001.0', text(`{"siteid":1001.0,"apikey":"${KEY}"}`), 'siteid-mismatch'),
  body('negative siteid', text(`{"siteid":-1001,"apikey":"${KEY}"}`), 'siteid-mismatch'),
  body('siteid string with a leading zero', credentials('01001', KEY), 'siteid-mismatch'),
  body('siteid string with spaces', credentials(' 1001', KEY), 'siteid-mismatch'),
  body('other siteid', credentials(1002, KEY), 'siteid-mismatch'),
  body('siteid true', json({ siteid: true, apikey: KEY }), 'siteid-mismatch'),
  body('siteid null', json({ siteid: null, apikey: KEY }), 'siteid-mismatch'),
  body('siteid in an array', json({ siteid: [1001], apikey: KEY }), 'siteid-mismatch'),
  body('siteid in an object', json({ siteid: { id: 1001 }, apikey: KEY }), 'siteid-mismatch'),
  body('apikey of another key of the same site', credentials(1001, ROTATED_KEY), 'apikey-mismatch'),
  body('apikey as a number', json({ siteid: 1001, apikey: 3 }), 'apikey-mismatch'),
  body('apikey with surrounding spaces', credentials(1001, ` ${KEY} `), 'apikey-mismatch'),
  body('siteid twice', text(`{"siteid":1001,"siteid":1001,"apikey":"${KEY}"}`), 'siteid-duplicate'),
  body('apikey twice, the second one differing', text(`{"siteid":1001,"apikey":"${KEY}","apikey":"${ROTATED_KEY}"}`), 'apikey-duplicate'),
  body('siteid twice in different case', text(`{"siteid":1001,"SiteID":1002,"apikey":"${KEY}"}`), 'siteid-duplicate'),
  body('siteid twice, once spelled with an escape', text(`{"siteid":1001,"s\\u0069teid":1002,"apikey":"${KEY}"}`), 'siteid-duplicate'),
  body('siteid twice, once with a long s that Go folds to s', text(`{"siteid":1001,"apikey":"${KEY}","\u017fiteid":2}`), 'siteid-duplicate'),
  body('apikey twice, once with a Kelvin sign', text(`{"siteid":1001,"apikey":"${KEY}","api\u212aey":"${ROTATED_KEY}"}`), 'apikey-duplicate'),
  body('apikey twice, once in full-width letters', text(`{"siteid":1001,"apikey":"${KEY}","\uff41\uff50\uff49\uff4b\uff45\uff59":"x"}`), 'apikey-duplicate'),
  body('siteid twice, once with dotted capital I', text(`{"siteid":1001,"apikey":"${KEY}","s\u0130te\u0130d":9}`), 'siteid-duplicate'),
  body('only a long-s siteid, which is not the field itself', text(`{"\u017fiteid":1001,"apikey":"${KEY}"}`), 'siteid-missing'),
  body('siteid twice, once after an astral combining mark written as escapes', text(`{"siteid":1001,"apikey":"${KEY}","\\ud834\\udd65siteid":2}`), 'siteid-duplicate'),
  body('siteid twice, once with a half-width voiced sound mark', text(`{"siteid":1001,"apikey":"${KEY}","siteid\uff9e":2}`), 'siteid-duplicate'),
  body('apikey twice, once in mathematical bold letters', text(`{"siteid":1001,"apikey":"${KEY}","\u{1d41a}\u{1d429}\u{1d422}\u{1d424}\u{1d41e}\u{1d432}":"x"}`), 'apikey-duplicate'),
  body('a name that only spells siteid inside a string value', text(`{"note":"\\"siteid\\":2,","siteid":1001,"apikey":"${KEY}"}`), 'allow'),
  body('valid credentials followed by an unfinished member', text(`{"siteid":1001,"apikey":"${KEY}","more":`), 'body-not-json'),
  body('valid credentials and a trailing comma', text(`{"siteid":1001,"apikey":"${KEY}",}`), 'body-not-json'),
  body('a repeated siteid in a body that is not JSON is named as not JSON', text(`{"siteid":1001,"siteid":1001,"apikey":"${KEY}"`), 'body-not-json'),
  body('a repeat is named even when the other field is wrong', text(`{"siteid":1,"apikey":"${KEY}","apikey":"x"}`), 'apikey-duplicate'),
  {
    name: 'body siteid of the largest bigint compared digit for digit',
    input: input({ authorization: `${MAX_SITE}:${MAX_SITE_KEY}`, body: text(`{"siteid":9223372036854775806,"apikey":"${MAX_SITE_KEY}"}`) }),
    expect: 104,
    rule: 'siteid-mismatch',
  },
];

const precedenceCases: Case[] = [
  {
    name: '108 before everything',
    input: input({ authorization: '1001', clientAddress: 'bad', body: { kind: 'not-utf8' } }),
    expect: 108,
  },
  { name: '101 before 103', input: input({ authorization: `4242:${KEY}`, clientAddress: '192.0.2.1' }), expect: 101 },
  {
    name: '103 before 102: a stolen key cannot be tried from outside the allowlist',
    input: input({ authorization: `1001:${UNKNOWN_KEY}`, clientAddress: '192.0.2.1' }),
    expect: 103,
  },
  { name: '102 before 104', input: input({ authorization: `1001:${UNKNOWN_KEY}`, body: { kind: 'not-utf8' } }), expect: 102 },
  { name: '108 before a body that is too large', input: input({ authorization: undefined, body: tooLarge }), expect: 108 },
  { name: '101 before a body that is too large', input: input({ authorization: `4242:${KEY}`, body: tooLarge }), expect: 101 },
  { name: '103 before a body that is too large', input: input({ clientAddress: '192.0.2.1', body: tooLarge }), expect: 103 },
  { name: '102 before a body that is too large', input: input({ authorization: `1001:${UNKNOWN_KEY}`, body: tooLarge }), expect: 102 },
  { name: 'allowed', input: input(), expect: 'allow', keyId: '11' },
];

function describeOutcome(decision: Decision): string {
  return decision.outcome === 'allow' ? 'allow' : String(decision.denial.errorId);
}

const tables: Record<string, Case[]> = {
  'the Authorization header (108)': headerCases,
  'the site (101)': siteCases,
  'the allowlist (103)': ipCases,
  'the key (102)': keyCases,
  'the body credentials (104)': bodyCases,
  'precedence 108 → 101 → 103 → 102 → 104': precedenceCases,
};

describe('decide', () => {
  for (const [title, cases] of Object.entries(tables)) {
    describe(title, () => {
      for (const c of cases) {
        it(`${c.name} → ${c.expect}${c.rule ? ` (${c.rule})` : ''}`, () => {
          const decision = decide(c.input, snapshot, NOW, NO_SUNSET);
          assert.equal(describeOutcome(decision), String(c.expect));
          if (decision.outcome === 'allow') {
            assert.equal(decision.siteId, c.input.authorization?.split(':')[0]);
            if (c.keyId) assert.equal(decision.method === 'api_key' ? decision.keyId : undefined, c.keyId);
            return;
          }
          const { denial } = decision;
          if (c.message !== undefined) assert.equal(denialMessage(denial), c.message);
          if (c.rule !== undefined) assert.equal('rule' in denial ? denial.rule : undefined, c.rule);
          const body = denialBody(denial);
          assert.deepEqual(Object.keys(JSON.parse(body)), ['error']);
          assert.equal(JSON.parse(body).error.id, denial.errorId);
          const submittedKey = c.input.authorization?.split(':')[1]?.toLowerCase() ?? '';
          if (submittedKey.length >= 36) assert.ok(!body.toLowerCase().includes(submittedKey), 'full key echoed');
        });
      }
    });
  }

  it('refuses a key from the instant it expires, with no notification needed', () => {
    const request = input({ authorization: `1001:${EXPIRING_KEY}`, body: credentials(1001, EXPIRING_KEY) });
    assert.equal(describeOutcome(decide(request, snapshot, NOW + 59_999, NO_SUNSET)), 'allow');
    assert.equal(describeOutcome(decide(request, snapshot, NOW + 60_000, NO_SUNSET)), '102');
  });

  // What the partner and Envoy get for each error id, written out here: the messages of 108, 101 and
  // 102 are the spec's (Errors); the HTTP statuses and gRPC codes, which the spec leaves open, are
  // the table of docs/partner-errors.md.
  const answers: ReadonlyArray<{ readonly input: CheckInput; readonly sunset?: SunsetPolicy; readonly expected: readonly [number, number, string] }> = [
    { input: input({ authorization: undefined }), expected: [401, 16, '{"error":{"id":108,"message":"Site ID or API key is invalid or missing in the header"}}'] },
    { input: input({ authorization: `4242:${KEY}` }), expected: [401, 16, '{"error":{"id":101,"message":"Site ID 4242 is invalid"}}'] },
    { input: input({ clientAddress: '198.51.100.7' }), expected: [403, 7, '{"error":{"id":103,"message":"IP address 198.51.100.7 is not whitelisted for site ID 1001"}}'] },
    { input: input({ authorization: `1001:${UNKNOWN_KEY}` }), expected: [401, 16, '{"error":{"id":102,"message":"API key *****0abcd is invalid"}}'] },
    {
      input: input({ body: credentials(1002, KEY) }),
      expected: [401, 16, '{"error":{"id":104,"message":"Request body siteid does not match the site ID in the Authorization header"}}'],
    },
    {
      input: input(),
      sunset: { sunsetAt: NOW - 1, enforce: true, guideUrl: undefined },
      expected: [401, 16, '{"error":{"id":105,"message":"API key authentication has been retired; use token-based authentication"}}'],
    },
  ];
  for (const { input: request, sunset, expected } of answers) {
    const id = (JSON.parse(expected[2]) as { error: { id: number } }).error.id;
    it(`answers ${id} with HTTP ${expected[0]}, gRPC code ${expected[1]} and the body ${expected[2]}`, () => {
      const decision = decide(request, snapshot, NOW, sunset ?? NO_SUNSET);
      assert.equal(decision.outcome, 'deny');
      if (decision.outcome !== 'deny') return;
      const entry = ERROR_CATALOGUE[decision.denial.errorId];
      assert.deepEqual([entry.httpStatus, entry.grpcStatus, denialBody(decision.denial)], expected);
    });
  }
});
