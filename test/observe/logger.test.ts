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

/** An object that holds `value` at a redaction path, with each `*` standing for some field name. */
function objectAt(path: string, value: unknown): object {
  return path
    .split('.')
    .reverse()
    .reduce<unknown>((inner, part) => ({ [part === '*' ? 'anything' : part]: inner }), value) as object;
}

describe('logger redaction (REDACTED_PATHS)', () => {
  for (const path of REDACTED_PATHS) {
    it(`censors a value at ${path}`, () => {
      const text = logged(objectAt(path, SECRET));
      assert.ok(!text.includes(SECRET), text);
      assert.match(text, /\[redacted\]/);
    });
  }

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
