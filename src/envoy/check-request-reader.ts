import protobuf from 'protobufjs';
import type { AddressMessage, AttributeContextMessage, CheckRequestMessage, HeaderValueMessage, HttpRequestMessage } from './messages.js';

type Reader = protobuf.Reader;
type Writable<T> = { -readonly [K in keyof T]: T[K] };

type NameRead = (name: string) => boolean;

/** What the view reads of each map. */
export interface NamesRead {
  readonly header: NameRead;
  /** Lower-cased: an ASCII name is compared with these byte by byte, without a string. */
  readonly headerNames: readonly string[];
  readonly contextExtension: NameRead;
}

/** Only what the view reads, no string per header; read exactly as protobufjs 7.6's decoders (tests compare). */
export function checkRequestReader(namesRead: NamesRead): (bytes: Uint8Array) => CheckRequestMessage {
  const kept: Kept = {
    headers: { read: namesRead.header, names: namesRead.headerNames },
    contextExtensions: { read: namesRead.contextExtension },
  };
  return (bytes) => {
    // grpc-js hands over a Buffer; any other bytes are viewed as one, as the text of a span is a Buffer's.
    const reader = protobuf.Reader.create(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    let attributes: AttributeContextMessage | undefined;
    while (reader.pos < reader.len) {
      const tag = reader.uint32();
      if (tag >>> 3 === 1) attributes = attributeContext(reader, 1, kept);
      else reader.skipType(tag & 7, 0);
    }
    return attributes === undefined ? {} : { attributes };
  };
}

interface Kept {
  readonly headers: KeysKept;
  readonly contextExtensions: KeysKept;
}

/** A map's kept keys: those `read` says, found without a string by their lower-case `names` when given. */
interface KeysKept {
  readonly read: NameRead;
  readonly names?: readonly string[];
}

const NOTHING = Buffer.alloc(0);

/** Where a string or bytes field lies, so that it is made only if kept. */
interface Span {
  start: number;
  end: number;
}

/** Bounds the reader to the message whose length comes next. */
function enter(reader: Reader): number {
  const length = reader.uint32();
  const end = reader.pos + length;
  if (end > reader.len) throw RangeError('index out of range');
  reader.len = end;
  return end;
}

function leave(reader: Reader, end: number, outer: number): void {
  if (reader.pos !== end) throw RangeError('index out of range');
  reader.len = outer;
}

/** As Reader#string reads one (cut at the reader's bound), without the text. */
function passString(reader: Reader, span: Span): void {
  const length = reader.uint32();
  span.start = reader.pos;
  span.end = reader.pos = Math.min(reader.pos + length, reader.len);
}

/** As Reader#bytes reads them (refused past the bound), without a copy. */
function passBytes(reader: Reader, span: Span): void {
  const length = reader.uint32();
  span.start = reader.pos;
  reader.skip(length);
  span.end = reader.pos;
}

const textAt = (reader: Reader, start: number, end: number): string => (reader.buf as Buffer).toString('utf8', start, end);
const bytesAt = (reader: Reader, start: number, end: number): Buffer => (start === end ? NOTHING : (reader.buf as Buffer).subarray(start, end));

function attributeContext(reader: Reader, depth: number, kept: Kept): AttributeContextMessage {
  const outer = reader.len;
  const end = enter(reader);
  const context: Writable<AttributeContextMessage> = {};
  let extensions: Record<string, string> | undefined;
  while (reader.pos < end) {
    const tag = reader.uint32();
    switch (tag >>> 3) {
      case 1:
        context.source = { address: peerAddress(reader, depth + 1) };
        break;
      case 4:
        context.request = { http: request(reader, depth + 1, kept.headers) };
        break;
      case 10:
        extensions ??= {};
        mapEntry(reader, depth, extensions, kept.contextExtensions);
        break;
      default:
        reader.skipType(tag & 7, depth);
    }
  }
  leave(reader, end, outer);
  if (extensions !== undefined) context.context_extensions = extensions;
  return context;
}

/** AttributeContext.Peer: its address. */
function peerAddress(reader: Reader, depth: number): AddressMessage | undefined {
  const outer = reader.len;
  const end = enter(reader);
  let address: AddressMessage | undefined;
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag >>> 3 === 1) address = addressOf(reader, depth + 1);
    else reader.skipType(tag & 7, depth);
  }
  leave(reader, end, outer);
  return address;
}

/** config.core.v3.Address: the socket address; a pipe is read past, as it has no IP. */
function addressOf(reader: Reader, depth: number): AddressMessage {
  const outer = reader.len;
  const end = enter(reader);
  const address: Writable<AddressMessage> = {};
  while (reader.pos < end) {
    const tag = reader.uint32();
    switch (tag >>> 3) {
      case 1:
        address.socket_address = socketAddress(reader, depth + 1);
        break;
      case 2:
        pipe(reader, depth + 1);
        break;
      default:
        reader.skipType(tag & 7, depth);
    }
  }
  leave(reader, end, outer);
  return address;
}

function socketAddress(reader: Reader, depth: number): { address?: string } {
  const outer = reader.len;
  const end = enter(reader);
  let address: string | undefined;
  while (reader.pos < end) {
    const tag = reader.uint32();
    switch (tag >>> 3) {
      case 2:
        address = reader.string();
        break;
      case 3:
        reader.uint32(); // port_value
        break;
      default:
        reader.skipType(tag & 7, depth);
    }
  }
  leave(reader, end, outer);
  return address === undefined ? {} : { address };
}

function pipe(reader: Reader, depth: number): void {
  const outer = reader.len;
  const end = enter(reader);
  const path: Span = { start: 0, end: 0 };
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag >>> 3 === 1) passString(reader, path);
    else reader.skipType(tag & 7, depth);
  }
  leave(reader, end, outer);
}

function request(reader: Reader, depth: number, headersKept: KeysKept): HttpRequestMessage | undefined {
  const outer = reader.len;
  const end = enter(reader);
  let http: HttpRequestMessage | undefined;
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag >>> 3 === 2) http = httpRequest(reader, depth + 1, headersKept);
    else reader.skipType(tag & 7, depth);
  }
  leave(reader, end, outer);
  return http;
}

function httpRequest(reader: Reader, depth: number, headersKept: KeysKept): HttpRequestMessage {
  const outer = reader.len;
  const end = enter(reader);
  const http: Writable<HttpRequestMessage> = {};
  let headers: Record<string, string> | undefined;
  while (reader.pos < end) {
    const tag = reader.uint32();
    switch (tag >>> 3) {
      case 1:
        http.id = reader.string();
        break;
      case 3:
        headers ??= {};
        mapEntry(reader, depth, headers, headersKept);
        break;
      // method, path, host: the view reads none of them.
      case 2:
      case 4:
      case 5:
        passString(reader, passedSpan);
        break;
      case 9:
        http.size = reader.int64().toString();
        break;
      case 11:
        http.body = reader.string();
        break;
      case 12:
        http.raw_body = reader.bytes();
        break;
      case 13:
        http.header_map = { headers: headerMap(reader, depth + 1, headersKept) };
        break;
      default:
        reader.skipType(tag & 7, depth);
    }
  }
  leave(reader, end, outer);
  if (headers !== undefined) http.headers = headers;
  return http;
}

/** Reused: a read runs to its end without yielding, and neither a map entry nor a header holds a message. */
const keySpan: Span = { start: 0, end: 0 };
const passedSpan: Span = { start: 0, end: 0 };
const valueSpan: Span = { start: 0, end: 0 };
const rawValueSpan: Span = { start: 0, end: 0 };

/** spelledName: the index of the name the bytes are exactly, or one of these. */
const NOT_ASCII = -1;
const NONE = -2;
const A_NAME_IN_ANOTHER_CASE = -3;

function spelledName(bytes: Uint8Array, start: number, end: number, names: readonly string[]): number {
  for (let at = start; at < end; at++) if (bytes[at]! >= 0x80) return NOT_ASCII;
  for (let index = 0; index < names.length; index++) {
    const name = names[index]!;
    if (name.length !== end - start) continue;
    let exact = true;
    let at = start;
    for (; at < end; at++) {
      const byte = bytes[at]!;
      const code = name.charCodeAt(at - start);
      if (byte === code) continue;
      // An ASCII letter lower-cases by its 0x20 bit, as toLowerCase does.
      if (byte >= 0x41 && byte <= 0x5a && (byte | 0x20) === code) exact = false;
      else break;
    }
    if (at === end) return exact ? index : A_NAME_IN_ANOTHER_CASE;
  }
  return NONE;
}

/** The key in `keySpan` as text if it is kept; otherwise no string is made of it. */
function keptKey(reader: Reader, kept: KeysKept): string | undefined {
  const { start, end } = keySpan;
  if (kept.names !== undefined) {
    const spelled = spelledName(reader.buf, start, end, kept.names);
    if (spelled === NONE) return undefined;
    if (spelled >= 0) return kept.names[spelled];
    if (spelled === A_NAME_IN_ANOTHER_CASE) return textAt(reader, start, end);
  }
  const key = textAt(reader, start, end);
  return kept.read(key) ? key : undefined;
}

/** As protobufjs: an absent key or value is '', and `__proto__` is a key like any other. */
function mapEntry(reader: Reader, depth: number, map: Record<string, string>, kept: KeysKept): void {
  passNameAndValue(reader, depth, false);
  const { start, end } = valueSpan;
  const key = keptKey(reader, kept);
  if (key === undefined) return;
  if (key === '__proto__') Object.defineProperty(map, key, { enumerable: true, configurable: true, writable: true });
  map[key] = textAt(reader, start, end);
}

/** A map entry (key 1, value 2) or a HeaderValue (raw_value 3); `depth` as protobufjs counts skipped groups. */
function passNameAndValue(reader: Reader, depth: number, withRawValue: boolean): void {
  const outer = reader.len;
  const end = enter(reader);
  keySpan.start = keySpan.end = valueSpan.start = valueSpan.end = rawValueSpan.start = rawValueSpan.end = 0;
  while (reader.pos < end) {
    const tag = reader.uint32();
    const field = tag >>> 3;
    if (field === 1) passString(reader, keySpan);
    else if (field === 2) passString(reader, valueSpan);
    else if (field === 3 && withRawValue) passBytes(reader, rawValueSpan);
    else reader.skipType(tag & 7, depth);
  }
  leave(reader, end, outer);
}

/** config.core.v3.HeaderMap: the headers read, in order. */
function headerMap(reader: Reader, depth: number, headersKept: KeysKept): HeaderValueMessage[] {
  const outer = reader.len;
  const end = enter(reader);
  const headers: HeaderValueMessage[] = [];
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag >>> 3 !== 1) {
      reader.skipType(tag & 7, depth);
      continue;
    }
    const header = headerValue(reader, depth + 1, headersKept);
    if (header !== undefined) headers.push(header);
  }
  leave(reader, end, outer);
  return headers;
}

function headerValue(reader: Reader, depth: number, headersKept: KeysKept): HeaderValueMessage | undefined {
  passNameAndValue(reader, depth, true);
  const { start: valueStart, end: valueEnd } = valueSpan;
  const { start: rawStart, end: rawEnd } = rawValueSpan;
  const key = keptKey(reader, headersKept);
  return key === undefined ? undefined : { key, value: textAt(reader, valueStart, valueEnd), raw_value: bytesAt(reader, rawStart, rawEnd) };
}
