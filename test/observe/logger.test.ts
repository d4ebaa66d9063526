import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Writable } from 'node:stream';
import { createLogger, REDACTED_PATHS } from '../../src/observe/logger.js';
import { checkRequest } from '../support/envoy-client.js';

const SECRET = '6f1c1e0a-8a4b-4c52-9d3e-0b7a2c9d4e5f';

/** What the logger writes for one object at info. */
function logged(object: object): string {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  createLogger('info', sink).info(object, 'message');
  return text;
}

/**
 * Every credential path the logger must censor, each with a log object that holds the secret there at
 * the top level, written out rather than derived from REDACTED_PATHS: a path dropped from the list
 * fails its own test.
 */
const S = SECRET;
const CENSORED: ReadonlyArray<readonly [string, object]> = [
  ['authorization', { authorization: S }],
  ['Authorization', { Authorization: S }],
  ['headers.authorization', { headers: { authorization: S } }],
  ['headers.Authorization', { headers: { Authorization: S } }],
  ['input.authorization', { input: { authorization: S } }],
  ['body', { body: S }],
  ['input.body', { input: { body: { kind: 'text', text: S } } }],
  ['attributes.request.http.headers', { attributes: { request: { http: { headers: { 'x-api-key': S } } } } }],
  ['attributes.request.http.header_map', { attributes: { request: { http: { header_map: { headers: [{ key: 'authorization', value: S }] } } } } }],
  ['attributes.request.http.body', { attributes: { request: { http: { body: S } } } }],
  ['attributes.request.http.raw_body', { attributes: { request: { http: { raw_body: S } } } }],
  ['apiKey', { apiKey: S }],
  ['apikey', { apikey: S }],
  ['submittedKey', { submittedKey: S }],
  ['password', { password: S }],
  ['databaseUrl', { databaseUrl: `postgres://authz:${S}@db/authz` }],
  ['databaseListenUrl', { databaseListenUrl: `postgres://authz:${S}@db/authz` }],
];

/** The fields a log line may nest an object under; each credential path is censored one level down too. */
const NESTED_UNDER = [
  'call',
  'checkRequest',
  'config',
  'database',
  'detail',
  'err',
  'error',
  'event',
  'header',
  'input',
  'issued',
  'options',
  'parsed',
  'req',
  'request',
  'response',
];

describe('logger redaction (REDACTED_PATHS)', () => {
  for (const [path, object] of CENSORED) {
    it(`censors what lies at ${path}`, () => {
      const text = logged(object);
      assert.ok(!text.includes(SECRET), text);
      assert.match(text, /\[redacted\]/);
    });
  }

  for (const field of NESTED_UNDER) {
    it(`censors every credential path one level down, under ${field}`, () => {
      for (const [path, object] of CENSORED) {
        const text = logged({ [field]: object });
        assert.ok(!text.includes(SECRET), `${field}.${path}: ${text}`);
        assert.match(text, /\[redacted\]/);
      }
    });
  }

  it('declares no path that the tables above do not test', () => {
    const tested = new Set(CENSORED.flatMap(([path]) => [path, ...NESTED_UNDER.map((field) => `${field}.${path}`)]));
    assert.deepEqual(REDACTED_PATHS.filter((path) => !tested.has(path)), []);
  });

  it('redacts without wildcard paths, which pino checks against every line', () => {
    assert.deepEqual(REDACTED_PATHS.filter((path) => path.includes('*')), []);
  });

  // Shapes a future log line might carry by mistake: the request as received, in any of its forms.
  const shapes: Array<[string, object]> = [
    ['a CheckInput', { input: { authorization: `1001:${SECRET}`, body: { kind: 'text', text: `{"apikey":"${SECRET}"}` } } }],
    ['a CheckInput inside an event', { event: { input: { authorization: `1001:${SECRET}`, body: { kind: 'text', text: SECRET } } } }],
    ['a CheckRequest as Envoy sends it', checkRequest({ authorization: `1001:${SECRET}`, body: JSON.stringify({ apikey: SECRET }) }) as object],
    ['a CheckRequest inside a field', { request: checkRequest({ authorization: `1001:${SECRET}`, body: SECRET }) }],
    ['headers with a capital Authorization', { headers: { Authorization: `1001:${SECRET}` } }],
    ['headers one level down', { call: { headers: { authorization: `1001:${SECRET}` } } }],
    ['a parsed header', { header: { siteId: '1001', apiKey: SECRET, submittedKey: SECRET } }],
    ['a body by itself', { body: JSON.stringify({ siteid: 1001, apikey: SECRET }) }],
    ['a database configuration', { database: { databaseUrl: `postgres://u:${SECRET}@db/x`, password: SECRET } }],
  ];
  for (const [name, object] of shapes) {
    it(`keeps the key out of ${name}`, () => {
      const text = logged(object);
      assert.ok(!text.includes(SECRET), text);
    });
  }

  it('leaves what a log line should say: ids, the masked key, the client IP', () => {
    const fields = { requestId: 'req-1', siteId: '1001', keyId: '11', maskedKey: '*****d4e5f', clientIp: '203.0.113.7', errorId: 103 };
    const line = JSON.parse(logged(fields)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(fields)) assert.equal(line[name], value, name);
  });
});
