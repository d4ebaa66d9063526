import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig, type ClientIpSource } from '../../src/config.js';
import { checkRequestReader } from '../../src/envoy/check-request-reader.js';
import type { CheckRequestMessage } from '../../src/envoy/messages.js';
import { AUTHORIZATION_SERVICE } from '../../src/envoy/proto.js';
import { namesReadBy, viewCheckRequest, type CheckRequestView } from '../../src/envoy/request-view.js';
import { upstreamCheckMethod } from '../support/envoy-client.js';
import { randomWords } from '../support/random-words.js';

/** Envoy's own encoder, from its upstream protos: every field Envoy may send, not only those we declare. */
const encode = (request: object): Buffer => upstreamCheckMethod.requestSerialize(request);
/** The full decode, by proto-loader with our protos: what the reader must agree with. */
const decodeAll = AUTHORIZATION_SERVICE.Check.requestDeserialize;

const MAX_BODY_BYTES = loadConfig({}).maxBodyBytes;
const SOURCES: readonly ClientIpSource[] = [
  { kind: 'peer' },
  { kind: 'xff', trustedHops: 1 },
  { kind: 'header', name: 'x-real-ip' },
  { kind: 'header', name: '__proto__' },
  { kind: 'header', name: 'x-key' },
];

type Outcome = { readonly view: CheckRequestView } | { readonly error: string };

function outcome(decode: (bytes: Buffer) => CheckRequestMessage, bytes: Buffer, clientIpSource: ClientIpSource): Outcome {
  let message: CheckRequestMessage;
  try {
    message = decode(bytes);
  } catch (error) {
    return { error: `${(error as Error).name}: ${(error as Error).message}` };
  }
  return { view: viewCheckRequest(message, { clientIpSource, maxBodyBytes: MAX_BODY_BYTES }) };
}

/** The view of the reader's message equals the view of the full decode, or both refuse the bytes alike. */
function assertSameView(bytes: Buffer, what: string): void {
  for (const source of SOURCES) {
    const read = outcome(checkRequestReader(namesReadBy(source)), bytes, source);
    assert.deepStrictEqual(read, outcome(decodeAll, bytes, source), `${what}, CLIENT_IP_SOURCE ${JSON.stringify(source)}, bytes ${bytes.toString('hex')}`);
  }
}

const HEADER_NAMES = [
  'authorization', 'Authorization', 'x-request-id', 'X-Forwarded-For', 'x-forwarded-for', 'x-real-ip', 'content-length',
  'transfer-encoding', 'x-envoy-auth-partial-body', '__proto__', 'constructor', 'accept', 'user-agent', ':path', '',
  // Lower-cased, the Kelvin sign is a k: a name of 7 bytes read as the x-key of 5, a length no name read has.
  'X-\u212Aey',
];
const TEXTS = ['1001:6f1ed002-ab5d-4c3a-9d1e-0a3b5c7d9e1f', '203.0.113.7', '198.51.100.2, 203.0.113.7', '140', '0', 'chunked', 'true', '', ' é ', 'optional'];

/** Sets a property of its own, even `__proto__`, which an assignment would take for the prototype. */
function ownProperty(target: Record<string, string>, name: string, value: string): void {
  Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
}

/** A CheckRequest as Envoy may send it, with fields of every kind, some we read and many we do not. */
function randomRequest(next: () => number): object {
  const pick = <T>(items: readonly T[]): T => items[next() % items.length]!;
  const maybe = (): boolean => next() % 2 === 0;
  const headers: Record<string, string> = {};
  for (let count = next() % 6; count > 0; count--) ownProperty(headers, pick(HEADER_NAMES), pick(TEXTS));
  const headerList = Array.from({ length: next() % 4 }, () => ({
    key: pick(HEADER_NAMES),
    ...(maybe() ? { value: pick(TEXTS) } : {}),
    ...(maybe() ? { raw_value: Buffer.from(pick(TEXTS), 'utf8') } : {}),
  }));
  const address = maybe() ? { socket_address: { address: pick(TEXTS), port_value: next() % 65536 } } : { pipe: { path: '/run/envoy.sock', mode: 384 } };
  return {
    attributes: {
      source: { address, principal: 'spiffe://cluster.local/ns/a/sa/b', labels: { app: 'partner' } },
      destination: { address: { socket_address: { address: '10.0.0.5', port_value: 8443 } } },
      request: {
        time: { seconds: String(next()), nanos: next() % 1_000_000_000 },
        http: {
          id: maybe() ? String(next()) : '',
          method: pick(['POST', 'GET', '']),
          headers,
          ...(headerList.length > 0 ? { header_map: { headers: headerList } } : {}),
          path: pick(['/v1/orders?key=secret', '/v1/orders', '']),
          host: pick(['api.example.com', '']),
          scheme: 'https',
          query: 'key=secret',
          size: pick(['-1', '0', '140', '1099511627776', '-9223372036854775808']),
          protocol: 'HTTP/1.1',
          ...(maybe() ? { body: pick(TEXTS) } : { raw_body: Buffer.from(`{"siteid":1001,"apikey":"${pick(TEXTS)}"}`, 'utf8') }),
        },
      },
      context_extensions: maybe() ? { body_credentials: pick(['optional', 'required']), route: 'orders' } : {},
      metadata_context: { filter_metadata: { 'envoy.filters.http.jwt_authn': { fields: { sub: { string_value: 'x' } } } } },
      tls_session: { sni: 'api.example.com' },
    },
  };
}

/** The bytes changed as a damaged or hostile peer might: a byte flipped, cut short, bytes inserted, a run repeated. */
function mangled(bytes: Buffer, next: () => number): Buffer {
  const at = next() % Math.max(bytes.length, 1);
  switch (next() % 4) {
    case 0: {
      const copy = Buffer.from(bytes);
      copy[at] = next() & 255;
      return copy;
    }
    case 1:
      return bytes.subarray(0, at);
    case 2:
      return Buffer.concat([bytes.subarray(0, at), Buffer.from([next() & 255, next() & 255, next() & 255]), bytes.subarray(at)]);
    default:
      return Buffer.concat([bytes.subarray(0, at), bytes.subarray(at, at + (next() % 16)), bytes.subarray(at)]);
  }
}

function varint(value: number): Buffer {
  const bytes: number[] = [];
  for (; value >= 0x80; value >>>= 7) bytes.push((value & 0x7f) | 0x80);
  return Buffer.from([...bytes, value]);
}

/** A length-delimited field (wire type 2) of a number under 16, its parts end to end. */
function delimited(field: number, ...parts: ReadonlyArray<Buffer | string>): Buffer {
  const payload = Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : part)));
  return Buffer.concat([Buffer.from([(field << 3) | 2]), varint(payload.length), payload]);
}

/** An unknown field (6) as groups nested `levels` deep, each opened and closed. */
function nestedGroups(levels: number): Buffer {
  return Buffer.concat([Buffer.alloc(levels, (6 << 3) | 3), Buffer.alloc(levels, (6 << 3) | 4)]);
}

/** These bytes as the HttpRequest of a CheckRequest: attributes (1), request (4), http (2). */
const inHttp = (http: Buffer): Buffer => delimited(1, delimited(4, delimited(2, http)));

describe('the CheckRequest reader: what the view reads, without decoding the rest', () => {
  it('gives the view what the full decode gives it, for requests in Envoy\'s own encoding', () => {
    const next = randomWords(20);
    for (let index = 0; index < 400; index++) assertSameView(encode(randomRequest(next)), `request ${index}`);
  });

  it('refuses what the full decode refuses, and agrees on what both accept, when the bytes are mangled', () => {
    const next = randomWords(21);
    let refused = 0;
    for (let index = 0; index < 400; index++) {
      let bytes = encode(randomRequest(next));
      for (let round = 0; round < 6; round++) {
        bytes = mangled(bytes, next);
        assertSameView(bytes, `request ${index}, mangled ${round + 1} times`);
        if ('error' in outcome(decodeAll, bytes, { kind: 'peer' })) refused++;
      }
    }
    // Both outcomes were exercised: neither all refused nor all accepted.
    assert.ok(refused > 100 && refused < 2300, `${refused} of 2400 refused`);
  });

  it('agrees where the wire allows what an encoder never writes', () => {
    const partner = encode(randomRequest(randomWords(22)));
    const cases: ReadonlyArray<[string, Buffer]> = [
      // Two CheckRequests end to end: a second `attributes` replaces the first in protobufjs.
      ['a message field given twice', Buffer.concat([partner, encode({ attributes: { request: { http: { headers: { authorization: '7:other' } } } } })])],
      ['nothing at all', Buffer.alloc(0)],
      ['a map entry whose value comes first', inHttp(delimited(3, delimited(2, 'v'), delimited(1, 'authorization')))],
      ['a map entry with neither key nor value', inHttp(delimited(3))],
      ['a header given twice in the map', inHttp(Buffer.concat(['1001:first', '1001:second'].map((value) => delimited(3, delimited(1, 'authorization'), delimited(2, value)))))],
      // attributes (1) two bytes long, holding a request (4) that claims nine.
      ["a nested length past its parent's end", Buffer.from([0x0a, 0x02, 0x22, 0x09, ...Buffer.from('123456789')])],
      // HttpRequest.path (4) with wire type 0: protobufjs reads a length and text all the same.
      ['a string field sent as a varint', inHttp(Buffer.from([4 << 3, 0x02, 0x41, 0x42]))],
      // A string whose length runs past its message: cut at the message's end.
      ['a string longer than its message', inHttp(Buffer.from([(5 << 3) | 2, 0x7f, 0x41]))],
      ['bytes longer than their message', inHttp(Buffer.from([(12 << 3) | 2, 0x7f, 0x41]))],
      ['an end-group tag where none began', Buffer.from([(1 << 3) | 4])],
      // An unknown field (5) of AttributeContext as a group holding a varint.
      ['a group skipped inside a request', delimited(1, Buffer.from([(5 << 3) | 3, 0x08, 0x01, (5 << 3) | 4]))],
      // A tag whose varint runs on past the end of its message, into the bytes that follow it.
      ['a varint past its message', delimited(1, delimited(4, Buffer.concat([delimited(2, Buffer.from([0x80])), Buffer.from([0x01, 0x02])])))],
      // Groups nested in the HttpRequest, at depth 3: protobufjs refuses from 99 levels (a depth past 100 in all).
      ...[97, 98, 99, 100, 101].map((levels): [string, Buffer] => [`${levels} nested groups`, inHttp(nestedGroups(levels))]),
      // A port number (SocketAddress 3) whose varint would run on into its parent.
      ['a port number past its message', delimited(1, delimited(1, delimited(1, Buffer.concat([delimited(1, Buffer.from([3 << 3, 0x80])), Buffer.from([0x01])]))))],
      // The same at each place a group may be skipped, whose depth protobufjs counts differently.
      ...[95, 96, 97, 98, 99, 100, 101].flatMap((levels): Array<[string, Buffer]> => [
        [`${levels} nested groups in a headers entry`, inHttp(delimited(3, delimited(1, 'authorization'), nestedGroups(levels)))],
        [`${levels} nested groups in a HeaderValue`, inHttp(delimited(13, delimited(1, delimited(1, 'authorization'), nestedGroups(levels))))],
        [`${levels} nested groups in a context extension`, delimited(1, delimited(10, delimited(1, 'body_credentials'), nestedGroups(levels)))],
        [`${levels} nested groups in a SocketAddress`, delimited(1, delimited(1, delimited(1, delimited(1, nestedGroups(levels)))))],
        [`${levels} nested groups in a Pipe`, delimited(1, delimited(1, delimited(1, delimited(2, nestedGroups(levels)))))],
      ]),
      ['a pipe for an address', delimited(1, delimited(1, delimited(1, delimited(2, delimited(1, '/run/envoy.sock')))))],
    ];
    for (const [what, bytes] of cases) assertSameView(bytes, what);
  });

  it('keeps only the headers and context extensions the view reads', () => {
    const bytes = encode({
      attributes: {
        request: {
          http: {
            headers: { authorization: '1001:key', accept: 'application/json', 'user-agent': 'partner/1', 'x-real-ip': '203.0.113.9' },
            header_map: { headers: [{ key: 'cookie', value: 'session=1' }, { key: 'X-Request-Id', raw_value: Buffer.from('req-1') }] },
          },
        },
        context_extensions: { body_credentials: 'optional', route: 'orders' },
      },
    });
    const read = checkRequestReader(namesReadBy({ kind: 'header', name: 'x-real-ip' }))(bytes);
    assert.deepStrictEqual(read.attributes?.request?.http?.headers, { authorization: '1001:key', 'x-real-ip': '203.0.113.9' });
    assert.deepStrictEqual(
      read.attributes?.request?.http?.header_map?.headers?.map((header) => header.key),
      ['X-Request-Id'],
    );
    assert.deepStrictEqual(read.attributes?.context_extensions, { body_credentials: 'optional' });
    const byPeer = checkRequestReader(namesReadBy({ kind: 'peer' }))(bytes);
    assert.deepStrictEqual(byPeer.attributes?.request?.http?.headers, { authorization: '1001:key' });
  });

  it('reads bytes that are not a Buffer as it reads a Buffer', () => {
    const bytes = encode({ attributes: { request: { http: { headers: { authorization: '1001:key', 'x-request-id': 'r-1' } } } } });
    const read = checkRequestReader(namesReadBy({ kind: 'peer' }));
    const framed = Buffer.concat([Buffer.from('junk'), bytes]);
    assert.deepStrictEqual(read(new Uint8Array(framed.buffer, framed.byteOffset + 4, bytes.length)), read(bytes));
    assert.deepStrictEqual(read(bytes).attributes?.request?.http?.headers, { authorization: '1001:key', 'x-request-id': 'r-1' });
  });

  it('keeps a name whose lower case is one it reads, however many bytes it takes', () => {
    const kelvin = 'X-\u212Aey';
    const bytes = encode({ attributes: { request: { http: { headers: { [kelvin]: '203.0.113.9' }, header_map: { headers: [{ key: kelvin, value: '203.0.113.10' }] } } } } });
    const source: ClientIpSource = { kind: 'header', name: 'x-key' };
    const read = checkRequestReader(namesReadBy(source))(bytes);
    assert.deepStrictEqual(read.attributes?.request?.http?.headers, { [kelvin]: '203.0.113.9' });
    assert.equal(viewCheckRequest(read, { clientIpSource: source, maxBodyBytes: MAX_BODY_BYTES }).input.clientAddress, '203.0.113.9,203.0.113.10');
  });
});
