import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allowlistEntriesOf } from '../../src/operations/allowlist-operations.js';
import { countOf, futureInstantOf, importedKeyOf, instantOf, keyIdOf, siteIdOf, textOf } from '../../src/operations/fields.js';
import { expiresOf } from '../../src/operations/key-operations.js';
import { Refusal } from '../../src/operations/refusal.js';
import { partnerJwksOf, partnerJwksUriOf } from '../../src/operations/token-client-operations.js';

const NOW = Date.parse('2026-11-23T12:00:00Z');
const KEY = '6F1C3A52-8D0E-4B7A-9C21-5E3F4A6B7C8D';

/** A refusal with its code and field, in words for people: no flag, no command line. */
function refuses(run: () => unknown, expected: { code: string; field: string | undefined }, message: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof Refusal, String(error));
    assert.equal(error.code, expected.code);
    assert.equal(error.field, expected.field);
    assert.match(error.message, message);
    assert.doesNotMatch(error.message, /--[a-z]|sitekey-authz/);
    return true;
  });
}

describe('the fields people fill in', () => {
  it('takes canonical site ids and refuses the rest with an example, naming the field', () => {
    assert.equal(siteIdOf('1001'), '1001');
    assert.equal(siteIdOf('9223372036854775807'), '9223372036854775807');
    for (const text of ['0', '01', '+1', '-1', '1.0', '1e3', ' 1', '9223372036854775808', 'acme', '']) {
      refuses(() => siteIdOf(text), { code: 'SITE_ID_INVALID', field: 'siteId' }, /^the site id: .* is not a site id: .* e\.g\. 1001$/);
    }
    refuses(() => siteIdOf('x', 'id'), { code: 'SITE_ID_INVALID', field: 'id' }, /^the site id/);
  });

  it('takes key ids as the list of keys shows them', () => {
    assert.equal(keyIdOf('12'), '12');
    for (const text of ['0', '012', '*****20100', '']) refuses(() => keyIdOf(text), { code: 'KEY_ID_INVALID', field: 'keyId' }, /is not a key id: expected the number/);
    refuses(() => keyIdOf(KEY), { code: 'KEY_ID_INVALID', field: 'keyId' }, /that is an API key, not a key id/);
  });

  it('reads an expiry as a date (midnight UTC) or a zoned time in the future', () => {
    assert.equal(expiresOf(undefined, NOW), undefined);
    assert.equal(expiresOf('2027-01-31', NOW)?.toISOString(), '2027-01-31T00:00:00.000Z');
    assert.equal(expiresOf('2027-01-31T12:30:00+01:00', NOW)?.toISOString(), '2027-01-31T11:30:00.000Z');
    assert.equal(expiresOf('2026-11-23T12:00:01Z', NOW)?.toISOString(), '2026-11-23T12:00:01.000Z');
    const notInstants = ['tomorrow', '2027-01-31T12:00:00', '31/01/2027', '2027-02-30', '2027-13-01', '1798761600', '2027-01-31T24:00:00Z', '2027-01-31T12:60Z', '2027-01-31T12:00+24:00'];
    for (const text of notInstants) {
      refuses(() => expiresOf(text, NOW), { code: 'DATE_INVALID', field: 'expires' }, /^the expiry date: .* is not an ISO 8601 date or time with a zone on a day the calendar has, e\.g\. 2027-01-31/);
    }
    refuses(() => expiresOf('2026-11-23T12:00:00Z', NOW), { code: 'DATE_IN_PAST', field: 'expires' }, /in the past/);
    refuses(() => expiresOf('2020-01-01', NOW), { code: 'DATE_IN_PAST', field: 'expires' }, /^the expiry date: 2020-01-01 is in the past: a key must expire after it is issued; give a date after today, e\.g\. 2027-11-23$/);
  });

  it('refuses any date in the past where one makes no sense', () => {
    assert.equal(futureInstantOf('2027-03-31', 'until', NOW, 'why').toISOString(), '2027-03-31T00:00:00.000Z');
    refuses(() => futureInstantOf('2026-01-01', 'until', NOW, 'a grace that has ended'), { code: 'DATE_IN_PAST', field: 'until' }, /^the end date: 2026-01-01 is in the past: a grace that has ended/);
    assert.equal(instantOf('2020-01-01', 'at').toISOString(), '2020-01-01T00:00:00.000Z');
  });

  it('keeps names, notes and actors short and printable', () => {
    assert.equal(textOf(undefined, 'name', 10), '');
    assert.equal(textOf(undefined, 'actor', 10, 'root'), 'root');
    assert.equal(textOf('Acme Travel ✈', 'name', 20), 'Acme Travel ✈');
    refuses(() => textOf('Acme\nTravel', 'name', 20), { code: 'TEXT_HAS_CONTROL', field: 'name' }, /^the name must not contain control characters/);
    refuses(() => textOf('x'.repeat(21), 'note', 20), { code: 'TEXT_TOO_LONG', field: 'note' }, /^the note is 21 characters long; keep it to 20/);
    assert.equal(textOf('\u{1F600}'.repeat(20), 'name', 20), '\u{1F600}'.repeat(20));
    refuses(() => textOf('\u{1F600}'.repeat(21), 'name', 20), { code: 'TEXT_TOO_LONG', field: 'name' }, /is 21 characters long; keep it to 20/);
    assert.equal(textOf(`replaces ${KEY} and ${KEY.toLowerCase()}`, 'note', 100), 'replaces *****B7C8D and *****b7c8d');
    assert.equal(textOf(KEY, 'actor', 40), '*****B7C8D');
    assert.equal(textOf('شركة السفر', 'name', 20), 'شركة السفر');
    refuses(() => textOf('Acme\u0085Travel', 'name', 20), { code: 'TEXT_HAS_CONTROL', field: 'name' }, /on one line/);
    for (const mark of ['\u061c', '\u200e', '\u200f', '\u202a', '\u202e', '\u2066', '\u2069']) {
      refuses(() => textOf(`exe.${mark}txt`, 'note', 20), { code: 'TEXT_HAS_DIRECTION_CONTROL', field: 'note' }, /the invisible direction control U\+[0-9A-F]{4}.*write the text without it/);
    }
  });

  it('counts whole numbers within bounds', () => {
    assert.equal(countOf(undefined, 'since', 'days', 30, 100), 30);
    assert.equal(countOf('7', 'since', 'days', 30, 100), 7);
    for (const text of ['0', '101', '1.5', 'x']) refuses(() => countOf(text, 'since', 'days', 30, 100), { code: 'COUNT_INVALID', field: 'since' }, /from 1 to 100, e\.g\. 30$/);
  });

  it('reads one key, in either case, and never echoes what it refuses', () => {
    assert.equal(importedKeyOf(`${KEY}\n`), KEY.toLowerCase());
    assert.equal(importedKeyOf(`\r\n  ${KEY}  \r\n\n`), KEY.toLowerCase());
    const almost = `${KEY.slice(0, -1)}g`;
    for (const [input, got] of [['', 'nothing'], [almost, 'a line that is not a UUID'], [`${KEY}\n${KEY}`, '2 lines']] as const) {
      assert.throws(
        () => importedKeyOf(input),
        (error: unknown) =>
          error instanceof Refusal && error.code === 'KEY_INVALID' && error.message.includes(`got ${got}`) && !error.message.toLowerCase().includes(KEY.toLowerCase()) && !error.message.includes(almost),
      );
    }
    refuses(() => importedKeyOf('00000000-0000-0000-0000-000000000000'), { code: 'KEY_PLACEHOLDER', field: 'key' }, /placeholder anyone would guess/);
  });

  it('parses every allowlist entry, names all bad ones at once, and drops repeats', () => {
    assert.deepEqual(
      allowlistEntriesOf(['203.0.113.0/24', '::ffff:203.0.113.0/120', '2001:db8::/32']).map((entry) => entry.cidr),
      ['203.0.113.0/24', '2001:db8::/32'],
    );
    refuses(() => allowlistEntriesOf(['203.0.113.0/24', 'x', '10.0.0.1/8']), { code: 'ENTRY_INVALID', field: 'entries' }, /"x" is not an IP address.*; "10\.0\.0\.1\/8" has bits set.*\(nothing was changed\)$/);
    refuses(() => allowlistEntriesOf([]), { code: 'ENTRIES_EMPTY', field: 'entries' }, /at least one address/);
  });
});

describe("the partner's keys for private_key_jwt", () => {
  const publicKey = { kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0', use: 'sig' };

  it('takes a JWKS of public signing keys', () => {
    assert.deepEqual(partnerJwksOf(JSON.stringify({ keys: [publicKey] })), { keys: [publicKey] });
  });

  it('refuses private keys, shared secrets and what is no JWKS, saying why', () => {
    const cases: Array<[unknown, string, RegExp]> = [
      [{ keys: [{ ...publicKey, d: 'secret' }] }, 'JWKS_PRIVATE_KEY', /^the partner's key set: key 1 is private \(it has "d"\): ask the partner for their public keys only/],
      [{ keys: [publicKey, { kty: 'RSA', n: 'x', e: 'AQAB', p: 'x' }] }, 'JWKS_PRIVATE_KEY', /key 2 is private \(it has "p"\)/],
      [{ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }, 'JWKS_PRIVATE_KEY', /is private \(it has "k"\)/],
      [{ keys: [{ ...publicKey, use: 'enc' }] }, 'JWKS_INVALID', /for use "enc"; the client signs its assertions: "sig"/],
      [{ keys: [{ kty: 'XYZ' }] }, 'JWKS_INVALID', /kty "XYZ"; expected one of RSA, EC, OKP/],
      [{ keys: [] }, 'JWKS_INVALID', /1 to 10 public keys/],
      [[publicKey], 'JWKS_INVALID', /must be a JWKS/],
    ];
    for (const [input, code, message] of cases) refuses(() => partnerJwksOf(JSON.stringify(input)), { code, field: 'jwks' }, message);
    refuses(() => partnerJwksOf('{not json'), { code: 'JWKS_INVALID', field: 'jwks' }, /is not JSON: expected a JWKS/);
  });

  it('takes a key URL on https, or http on loopback only', () => {
    assert.equal(partnerJwksUriOf('https://partner.example/jwks.json'), 'https://partner.example/jwks.json');
    assert.equal(partnerJwksUriOf('http://127.0.0.1:8080/jwks'), 'http://127.0.0.1:8080/jwks');
    for (const bad of ['http://partner.example/jwks', 'ftp://partner.example/jwks', 'not a url', 'https://user:pw@partner.example/jwks']) {
      refuses(() => partnerJwksUriOf(bad), { code: 'JWKS_URI_INVALID', field: 'jwksUri' }, /is not the URL of the partner's key set/);
    }
  });
});
