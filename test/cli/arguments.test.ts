import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allowlistArguments,
  expiresOption,
  importedKeyArgument,
  keyIdArgument,
  oldExpiresOption,
  partnerJwksArgument,
  partnerJwksUriArgument,
  siteIdArgument,
  textOption,
  UsageError,
} from '../../src/cli/arguments.js';

const NOW = Date.parse('2026-11-23T12:00:00Z');
const KEY = '6F1C3A52-8D0E-4B7A-9C21-5E3F4A6B7C8D';

function refuses(run: () => unknown, message: RegExp): void {
  assert.throws(run, (error: unknown) => error instanceof UsageError && message.test(error.message));
}

describe('CLI arguments', () => {
  it('takes canonical site ids and refuses the rest with an example', () => {
    assert.equal(siteIdArgument('1001'), '1001');
    assert.equal(siteIdArgument('9223372036854775807'), '9223372036854775807');
    for (const text of ['0', '01', '+1', '-1', '1.0', '1e3', ' 1', '9223372036854775808', 'acme', '']) {
      refuses(() => siteIdArgument(text), /is not a site id: .* e\.g\. 1001/);
    }
  });

  it('takes key ids as shown by key list', () => {
    assert.equal(keyIdArgument('12'), '12');
    for (const text of ['0', '012', '*****20100', KEY, '']) refuses(() => keyIdArgument(text), /KEY ID column of `sitekey-authz key list <site>`/);
  });

  it('reads --expires as a date (midnight UTC) or a zoned time in the future', () => {
    assert.equal(expiresOption(undefined, NOW), undefined);
    assert.equal(expiresOption('2027-01-31', NOW)?.toISOString(), '2027-01-31T00:00:00.000Z');
    assert.equal(expiresOption('2027-01-31T12:30:00+01:00', NOW)?.toISOString(), '2027-01-31T11:30:00.000Z');
    assert.equal(expiresOption('2026-11-23T12:00:01Z', NOW)?.toISOString(), '2026-11-23T12:00:01.000Z');
    const notInstants = ['tomorrow', '2027-01-31T12:00:00', '31/01/2027', '2027-02-30', '2027-13-01', '1798761600', '2027-01-31T24:00:00Z', '2027-01-31T12:60Z', '2027-01-31T12:00+24:00'];
    for (const text of notInstants) {
      refuses(() => expiresOption(text, NOW), /not an ISO 8601 date or time with a zone; try --expires 2027-01-31/);
    }
    refuses(() => expiresOption('2026-11-23T12:00:00Z', NOW), /in the past/);
    refuses(() => expiresOption('2020-01-01', NOW), /in the past/);
  });

  it("gives a rolled key's old key a week unless told, and refuses an end in the past", () => {
    assert.equal(oldExpiresOption(undefined, NOW).toISOString(), '2026-11-30T12:00:00.000Z');
    assert.equal(oldExpiresOption('2026-12-01', NOW).toISOString(), '2026-12-01T00:00:00.000Z');
    refuses(() => oldExpiresOption('2026-11-23', NOW), /--old-expires 2026-11-23 is in the past/);
    refuses(() => oldExpiresOption('next week', NOW), /--old-expires "next week" is not an ISO 8601 date/);
  });

  it('keeps names, notes and actors short and printable', () => {
    assert.equal(textOption('name', undefined, 10), '');
    assert.equal(textOption('actor', undefined, 10, 'root'), 'root');
    assert.equal(textOption('name', 'Acme Travel ✈', 20), 'Acme Travel ✈');
    refuses(() => textOption('name', 'Acme\nTravel', 20), /--name must not contain control characters/);
    refuses(() => textOption('note', 'x'.repeat(21), 20), /--note is 21 characters long; keep it to 20/);
    assert.equal(textOption('name', '\u{1F600}'.repeat(20), 20), '\u{1F600}'.repeat(20));
    refuses(() => textOption('name', '\u{1F600}'.repeat(21), 20), /--name is 21 characters long; keep it to 20/);
    assert.equal(textOption('note', `replaces ${KEY} and ${KEY.toLowerCase()}`, 100), 'replaces *****B7C8D and *****b7c8d');
    assert.equal(textOption('actor', KEY, 40), '*****B7C8D');
    assert.equal(textOption('name', 'شركة السفر', 20), 'شركة السفر');
    refuses(() => textOption('name', 'Acme\u0085Travel', 20), /--name must not contain control characters.*on one line/);
    for (const mark of ['\u061c', '\u200e', '\u200f', '\u202a', '\u202e', '\u2066', '\u2069']) {
      refuses(() => textOption('note', `exe.${mark}txt`, 20), /--note must not contain the invisible direction control U\+[0-9A-F]{4}.*type the text without it/);
    }
  });

  it('reads one key from standard input, in either case, and never echoes what it refuses', () => {
    assert.equal(importedKeyArgument(`${KEY}\n`), KEY.toLowerCase());
    assert.equal(importedKeyArgument(`\r\n  ${KEY}  \r\n\n`), KEY.toLowerCase());
    const almost = `${KEY.slice(0, -1)}g`;
    for (const [input, got] of [['', 'nothing'], [almost, 'a line that is not a UUID'], [`${KEY}\n${KEY}`, '2 lines']] as const) {
      assert.throws(
        () => importedKeyArgument(input),
        (error: unknown) =>
          error instanceof UsageError && error.message.includes(`got ${got}`) && !error.message.toLowerCase().includes(KEY.toLowerCase()) && !error.message.includes(almost),
      );
    }
  });

  it('parses every allowlist argument, names all bad ones at once, and drops repeats', () => {
    assert.deepEqual(
      allowlistArguments(['203.0.113.0/24', '::ffff:203.0.113.0/120', '2001:db8::/32']).map((entry) => entry.cidr),
      ['203.0.113.0/24', '2001:db8::/32'],
    );
    refuses(() => allowlistArguments(['203.0.113.0/24', 'x', '10.0.0.1/8']), /"x" is not an IP address.*; "10\.0\.0\.1\/8" has bits set.*\(nothing was changed\)$/);
  });
});

describe("the partner's keys for private_key_jwt", () => {
  const publicKey = { kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0', use: 'sig' };

  it('takes a JWKS of public signing keys', () => {
    assert.deepEqual(partnerJwksArgument(JSON.stringify({ keys: [publicKey] })), { keys: [publicKey] });
  });

  it('refuses private keys, shared secrets and what is no JWKS, saying why', () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ keys: [{ ...publicKey, d: 'secret' }] }, /key 1 of the partner's key set is private \(it has "d"\): ask the partner for their public keys only/],
      [{ keys: [publicKey, { kty: 'RSA', n: 'x', e: 'AQAB', p: 'x' }] }, /key 2 .* is private \(it has "p"\)/],
      [{ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }, /is private \(it has "k"\)/],
      [{ keys: [{ ...publicKey, use: 'enc' }] }, /for use "enc"; the client signs its assertions: "sig"/],
      [{ keys: [{ kty: 'XYZ' }] }, /kty "XYZ"; expected one of RSA, EC, OKP/],
      [{ keys: [] }, /1 to 10 public keys/],
      [[publicKey], /must be a JWKS/],
    ];
    for (const [input, message] of cases) {
      assert.throws(() => partnerJwksArgument(JSON.stringify(input)), (error: unknown) => error instanceof UsageError && message.test(error.message), JSON.stringify(input));
    }
    assert.throws(() => partnerJwksArgument('{not json'), /is not JSON: expected a JWKS/);
  });

  it('takes a key URL on https, or http on loopback only', () => {
    assert.equal(partnerJwksUriArgument('https://partner.example/jwks.json'), 'https://partner.example/jwks.json');
    assert.equal(partnerJwksUriArgument('http://127.0.0.1:8080/jwks'), 'http://127.0.0.1:8080/jwks');
    for (const bad of ['http://partner.example/jwks', 'ftp://partner.example/jwks', 'not a url', 'https://user:pw@partner.example/jwks']) {
      assert.throws(() => partnerJwksUriArgument(bad), /is not the URL of the partner's key set/, bad);
    }
  });
});
