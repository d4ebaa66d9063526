import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig, type ClientIpSource } from '../../src/config.js';
import type { CheckInput } from '../../src/decision/types.js';
import type { CheckRequestMessage, HttpRequestMessage } from '../../src/envoy/messages.js';
import { viewCheckRequest, type RequestViewOptions } from '../../src/envoy/request-view.js';

const PEER: ClientIpSource = { kind: 'peer' };
const MAX_BODY_BYTES = loadConfig({}).maxBodyBytes;
const options = (clientIpSource: ClientIpSource = PEER, maxBodyBytes = MAX_BODY_BYTES): RequestViewOptions => ({ clientIpSource, maxBodyBytes });
const xff = (trustedHops: number): ClientIpSource => ({ kind: 'xff', trustedHops });
const header = (name: string): ClientIpSource => ({ kind: 'header', name });

/** A CheckRequest as proto-loader decodes it, with the given HttpRequest and peer. */
function checkRequest(http: HttpRequestMessage, peer = '203.0.113.7', contextExtensions: Record<string, string> = {}): CheckRequestMessage {
  return {
    attributes: {
      source: { address: { socket_address: { address: peer } } },
      request: { http },
      context_extensions: contextExtensions,
    },
  };
}

const raw = (text: string): Buffer => Buffer.from(text, 'latin1');

interface Case {
  readonly name: string;
  readonly request: unknown;
  readonly source?: ClientIpSource;
  readonly maxBodyBytes?: number;
  readonly expect: Partial<CheckInput> & { readonly requestId?: string | undefined };
}

const cases: readonly Case[] = [
  // Headers: both sources, raw_value vs value, repetition, case.
  {
    name: 'reads Authorization from the headers map',
    request: checkRequest({ headers: { authorization: '1001:abc' } }),
    expect: { authorization: '1001:abc' },
  },
  {
    name: 'reads Authorization from header_map raw_value (encode_raw_headers)',
    request: checkRequest({ header_map: { headers: [{ key: 'authorization', value: '', raw_value: raw('1001:raw') }] } }),
    expect: { authorization: '1001:raw' },
  },
  {
    name: 'prefers raw_value over value in header_map',
    request: checkRequest({ header_map: { headers: [{ key: 'authorization', value: 'text', raw_value: raw('bytes') }] } }),
    expect: { authorization: 'bytes' },
  },
  {
    name: 'falls back to value when raw_value is empty',
    request: checkRequest({ header_map: { headers: [{ key: 'authorization', value: '1001:text', raw_value: Buffer.alloc(0) }] } }),
    expect: { authorization: '1001:text' },
  },
  {
    name: 'decodes raw_value as latin1, one character per byte, so non-ASCII bytes stay non-ASCII',
    request: checkRequest({ header_map: { headers: [{ key: 'authorization', raw_value: Buffer.from([0x31, 0xc3, 0xa9, 0xff]) }] } }),
    expect: { authorization: '1\u00c3\u00a9\u00ff' },
  },
  {
    name: 'joins a header repeated in header_map with commas',
    request: checkRequest({
      header_map: { headers: [{ key: 'authorization', raw_value: raw('1001:a') }, { key: 'authorization', raw_value: raw('1001:b') }] },
    }),
    expect: { authorization: '1001:a,1001:b' },
  },
  {
    name: 'joins a header present in both sources with commas',
    request: checkRequest({ headers: { authorization: '1001:a' }, header_map: { headers: [{ key: 'authorization', value: '1001:b' }] } }),
    expect: { authorization: '1001:a,1001:b' },
  },
  {
    name: 'lower-cases header names, joining names that differ only in case',
    request: checkRequest({ headers: { Authorization: '1001:a', AUTHORIZATION: '1001:b' } }),
    expect: { authorization: '1001:a,1001:b' },
  },
  {
    name: 'lower-cases header_map names',
    request: checkRequest({ header_map: { headers: [{ key: 'AuThOrIzAtIoN', value: '1001:x' }] } }),
    expect: { authorization: '1001:x' },
  },
  {
    name: 'keeps an empty Authorization header as empty, not absent',
    request: checkRequest({ headers: { authorization: '' } }),
    expect: { authorization: '' },
  },
  {
    name: 'has no Authorization when the header is absent',
    request: checkRequest({ headers: { 'content-type': 'application/json' } }),
    expect: { authorization: undefined },
  },
  {
    name: 'ignores header_map entries without a string key and map values that are not strings',
    request: checkRequest({
      headers: { authorization: 7 as unknown as string },
      header_map: { headers: [null, 5, { value: 'x' }, { key: 9, value: 'y' }] as unknown as [] },
    }),
    expect: { authorization: undefined },
  },

  // Body.
  {
    name: 'reads the body from body (text)',
    request: checkRequest({ body: '{"siteid":1001}' }),
    expect: { body: { kind: 'text', text: '{"siteid":1001}' } },
  },
  {
    name: 'reads the body from raw_body (pack_as_bytes) as UTF-8',
    request: checkRequest({ raw_body: Buffer.from('{"name":"Zoë"}', 'utf8') }),
    expect: { body: { kind: 'text', text: '{"name":"Zoë"}' } },
  },
  {
    name: 'prefers raw_body over body',
    request: checkRequest({ body: 'text', raw_body: Buffer.from('bytes') }),
    expect: { body: { kind: 'text', text: 'bytes' } },
  },
  {
    name: 'reports raw_body that is not UTF-8 as not-utf8',
    request: checkRequest({ raw_body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]) }),
    expect: { body: { kind: 'not-utf8' } },
  },
  {
    name: 'reports a truncated UTF-8 sequence in raw_body as not-utf8',
    request: checkRequest({ raw_body: Buffer.from([0x7b, 0xe2, 0x82]) }),
    expect: { body: { kind: 'not-utf8' } },
  },
  {
    name: 'keeps a byte-order mark in raw_body, as body would',
    request: checkRequest({ raw_body: Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]) }),
    expect: { body: { kind: 'text', text: '\ufeff{}' } },
  },
  {
    name: 'refuses raw_body larger than the limit by its size, without decoding it',
    request: checkRequest({ raw_body: Buffer.from([0x7b, ...Buffer.alloc(1024, 0xff)]) }),
    maxBodyBytes: 1024,
    expect: { body: { kind: 'too-large', bytes: 1025, maxBytes: 1024 } },
  },
  {
    name: 'reads raw_body exactly as large as the limit',
    request: checkRequest({ raw_body: Buffer.from(`"${'x'.repeat(1022)}"`) }),
    maxBodyBytes: 1024,
    expect: { body: { kind: 'text', text: `"${'x'.repeat(1022)}"` } },
  },
  {
    name: 'measures body (text) in UTF-8 bytes, as Envoy received it',
    request: checkRequest({ body: 'é'.repeat(513) }),
    maxBodyBytes: 1024,
    expect: { body: { kind: 'too-large', bytes: 1026, maxBytes: 1024 } },
  },
  {
    name: 'reads body (text) of exactly the limit in UTF-8 bytes',
    request: checkRequest({ body: 'é'.repeat(512) }),
    maxBodyBytes: 1024,
    expect: { body: { kind: 'text', text: 'é'.repeat(512) } },
  },
  {
    name: 'refuses body (text) over the default limit of 1 MiB',
    request: checkRequest({ body: `{"siteid":1001,"padding":"${'x'.repeat(1 << 20)}"}` }),
    expect: { body: { kind: 'too-large', bytes: (1 << 20) + 28, maxBytes: 1 << 20 } },
  },
  {
    name: 'reads an empty body without a declared length as empty',
    request: checkRequest({ body: '', raw_body: Buffer.alloc(0), size: '0' }),
    expect: { body: { kind: 'empty', lengthDeclared: false } },
  },
  {
    name: 'reads an empty body with content-length > 0 as empty with a declared length',
    request: checkRequest({ headers: { 'content-length': '42' } }),
    expect: { body: { kind: 'empty', lengthDeclared: true } },
  },
  {
    name: 'does not count content-length 0 as a declared length',
    request: checkRequest({ headers: { 'content-length': '0' } }),
    expect: { body: { kind: 'empty', lengthDeclared: false } },
  },
  {
    name: 'counts HttpRequest.size > 0 as a declared length',
    request: checkRequest({ size: '17' }),
    expect: { body: { kind: 'empty', lengthDeclared: true } },
  },
  {
    name: 'does not count HttpRequest.size -1 (unknown) as a declared length',
    request: checkRequest({ size: '-1' }),
    expect: { body: { kind: 'empty', lengthDeclared: false } },
  },
  {
    name: 'counts transfer-encoding chunked as a declared length',
    request: checkRequest({ headers: { 'transfer-encoding': 'gzip, Chunked' } }),
    expect: { body: { kind: 'empty', lengthDeclared: true } },
  },
  {
    name: 'marks the body partial when x-envoy-auth-partial-body is true, in any case',
    request: checkRequest({ headers: { 'x-envoy-auth-partial-body': 'TRUE' }, body: '{}' }),
    expect: { bodyPartial: true },
  },
  {
    name: 'does not mark the body partial when x-envoy-auth-partial-body is false',
    request: checkRequest({ headers: { 'x-envoy-auth-partial-body': 'false' }, body: '{}' }),
    expect: { bodyPartial: false },
  },
  {
    name: 'marks the body partial when any repeated x-envoy-auth-partial-body value is true',
    request: checkRequest({ headers: { 'x-envoy-auth-partial-body': 'false' }, header_map: { headers: [{ key: 'x-envoy-auth-partial-body', value: 'true' }] } }),
    expect: { bodyPartial: true },
  },

  // context_extensions.
  {
    name: 'makes body credentials optional when the route says body_credentials: optional',
    request: checkRequest({}, '203.0.113.7', { body_credentials: 'optional' }),
    expect: { bodyCredentials: 'optional' },
  },
  {
    name: 'requires body credentials for any other body_credentials value',
    request: checkRequest({}, '203.0.113.7', { body_credentials: 'Optional ' }),
    expect: { bodyCredentials: 'required' },
  },
  {
    name: 'requires body credentials by default',
    request: checkRequest({}),
    expect: { bodyCredentials: 'required' },
  },

  // Client address.
  {
    name: 'peer: reads the source socket address',
    request: checkRequest({}, '2001:db8::1'),
    expect: { clientAddress: '2001:db8::1' },
  },
  {
    name: 'peer: has no address for a pipe peer',
    request: { attributes: { source: { address: { pipe: { path: '/run/envoy.sock' } } } } },
    expect: { clientAddress: undefined },
  },
  {
    name: 'peer: has no address when the source is missing',
    request: { attributes: { request: { http: {} } } },
    expect: { clientAddress: undefined },
  },
  {
    name: 'peer: ignores X-Forwarded-For',
    request: checkRequest({ headers: { 'x-forwarded-for': '198.51.100.1' } }),
    expect: { clientAddress: '203.0.113.7' },
  },
  {
    name: 'xff 0: takes the rightmost entry (the peer Envoy appended)',
    request: checkRequest({ headers: { 'x-forwarded-for': '192.0.2.1, 198.51.100.2, 203.0.113.3' } }),
    source: xff(0),
    expect: { clientAddress: '203.0.113.3' },
  },
  {
    name: 'xff 1: skips one entry from the right',
    request: checkRequest({ headers: { 'x-forwarded-for': '192.0.2.1, 198.51.100.2, 203.0.113.3' } }),
    source: xff(1),
    expect: { clientAddress: '198.51.100.2' },
  },
  {
    name: 'xff 2: skips two entries from the right',
    request: checkRequest({ headers: { 'x-forwarded-for': '192.0.2.1, 198.51.100.2, 203.0.113.3' } }),
    source: xff(2),
    expect: { clientAddress: '192.0.2.1' },
  },
  {
    name: 'xff: too few entries gives no address (fail closed)',
    request: checkRequest({ headers: { 'x-forwarded-for': '198.51.100.2, 203.0.113.3' } }),
    source: xff(2),
    expect: { clientAddress: undefined },
  },
  {
    name: 'xff: trims spaces and tabs around entries',
    request: checkRequest({ headers: { 'x-forwarded-for': '192.0.2.1,\t 198.51.100.2 ,203.0.113.3' } }),
    source: xff(1),
    expect: { clientAddress: '198.51.100.2' },
  },
  {
    name: 'xff: an empty entry counts as an entry and gives no address',
    request: checkRequest({ headers: { 'x-forwarded-for': '192.0.2.1, ,203.0.113.3' } }),
    source: xff(1),
    expect: { clientAddress: undefined },
  },
  {
    name: 'xff: counts across repeated X-Forwarded-For headers joined by commas',
    request: checkRequest({
      header_map: { headers: [{ key: 'x-forwarded-for', value: '192.0.2.1' }, { key: 'x-forwarded-for', value: '203.0.113.3' }] },
    }),
    source: xff(1),
    expect: { clientAddress: '192.0.2.1' },
  },
  {
    name: 'xff: has no address without the header, even with a peer',
    request: checkRequest({}),
    source: xff(0),
    expect: { clientAddress: undefined },
  },
  {
    name: 'xff: does not validate the entry (the decision parses it)',
    request: checkRequest({ headers: { 'x-forwarded-for': 'not-an-ip' } }),
    source: xff(0),
    expect: { clientAddress: 'not-an-ip' },
  },
  {
    name: 'header: reads the named header, trimmed',
    request: checkRequest({ headers: { 'x-envoy-external-address': ' 198.51.100.77 ' } }),
    source: header('x-envoy-external-address'),
    expect: { clientAddress: '198.51.100.77' },
  },
  {
    name: 'header: has no address when the header is absent',
    request: checkRequest({}),
    source: header('x-envoy-external-address'),
    expect: { clientAddress: undefined },
  },

  // Request id.
  {
    name: 'takes the request id from x-request-id',
    request: checkRequest({ id: '12345', headers: { 'x-request-id': 'req-1' } }),
    expect: { requestId: 'req-1' },
  },
  {
    name: 'falls back to HttpRequest.id for the request id',
    request: checkRequest({ id: '12345' }),
    expect: { requestId: '12345' },
  },

  // Hostile shapes: nothing throws, everything reads as absent.
  {
    name: 'reads a request without attributes as empty',
    request: {},
    expect: { authorization: undefined, clientAddress: undefined, body: { kind: 'empty', lengthDeclared: false }, bodyPartial: false, bodyCredentials: 'required', requestId: undefined },
  },
  { name: 'reads null as an empty request', request: null, expect: { authorization: undefined, clientAddress: undefined } },
  { name: 'reads a string as an empty request', request: 'CheckRequest', expect: { authorization: undefined } },
  { name: 'reads attributes: null as empty', request: { attributes: null }, expect: { authorization: undefined } },
  { name: 'reads a missing request as empty', request: { attributes: { source: null } }, expect: { authorization: undefined } },
  { name: 'reads request.http: null as empty', request: { attributes: { request: { http: null } } }, expect: { body: { kind: 'empty', lengthDeclared: false } } },
  {
    name: 'reads fields of the wrong type as absent',
    request: {
      attributes: {
        source: { address: { socket_address: { address: 42 } } },
        request: { http: { headers: ['authorization'], header_map: { headers: 'authorization: 1' }, body: 5, raw_body: 'text', size: {}, id: [] } },
        context_extensions: 'body_credentials=optional',
      },
    },
    expect: { authorization: undefined, clientAddress: undefined, body: { kind: 'empty', lengthDeclared: false }, bodyCredentials: 'required', requestId: undefined },
  },
];

describe('viewCheckRequest', () => {
  for (const c of cases) {
    it(c.name, () => {
      const view = viewCheckRequest(c.request as CheckRequestMessage, options(c.source, c.maxBodyBytes));
      const actual: Record<string, unknown> = { ...view.input, requestId: view.requestId };
      for (const [field, expected] of Object.entries(c.expect)) {
        assert.deepEqual(actual[field], expected, field);
      }
    });
  }

  it('clips a long request id so it cannot flood a log line', () => {
    const view = viewCheckRequest(checkRequest({ headers: { 'x-request-id': 'r'.repeat(10_000) } }), options());
    assert.equal(view.requestId?.length, 256);
  });
});
