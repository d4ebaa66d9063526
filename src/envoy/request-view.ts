import type { ClientIpSource } from '../config.js';
import type { BodyCredentialsPolicy, BodyView, CheckInput } from '../decision/types.js';
import { clipForLog } from '../common/log-text.js';
import { forwardedForEntry } from '../allowlist/client-ip.js';
import type { NamesRead } from './check-request-reader.js';
import type { CheckRequestMessage, HeaderValueMessage, HttpRequestMessage } from './messages.js';

/** What the service was configured to read from a CheckRequest. */
export interface RequestViewOptions {
  readonly clientIpSource: ClientIpSource;
  /** MAX_BODY_BYTES: a larger body is refused unread. */
  readonly maxBodyBytes: number;
}

/** A CheckRequest reduced to the plain facts the decision and the logs read. */
export interface CheckRequestView {
  readonly input: CheckInput;
  /** `x-request-id`, else Envoy's HttpRequest.id; for correlating our log line with Envoy's. */
  readonly requestId: string | undefined;
}

/** Request header names, lower-cased, to their values; repeated headers joined by ",". */
type RequestHeaders = ReadonlyMap<string, string>;

// Bytes that are not UTF-8 are refused, not replaced: a replaced body could still parse as JSON.
// The BOM is kept so that `raw_body` and `body` yield the same text for the same bytes.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function record(value: unknown): Readonly<Record<string, unknown>> | undefined {
  return isRecord(value) ? value : undefined;
}

function nonEmptyText(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function nonEmptyBytes(value: unknown): Uint8Array | undefined {
  return value instanceof Uint8Array && value.length > 0 ? value : undefined;
}

/** HTTP optional whitespace (RFC 9110 §5.6.3) only: other Unicode spaces are part of the value. */
function trimOws(text: string): string {
  return text.replace(/^[ \t]+|[ \t]+$/g, '');
}

/**
 * A header value from header_map. Envoy puts it in raw_value (bytes) when encode_raw_headers is on.
 * Bytes are read as latin1, one character per byte, so a non-ASCII byte can never decode into the
 * ASCII that a site id or UUID key is made of.
 */
function headerMapValue(header: HeaderValueMessage): string {
  const raw = nonEmptyBytes(header.raw_value);
  if (raw !== undefined) return Buffer.from(raw.buffer, raw.byteOffset, raw.length).toString('latin1');
  return typeof header.value === 'string' ? header.value : '';
}

/** name.toLowerCase(), without a new string for a name that has nothing to lower: Envoy's are lower case already. */
function lowerCased(name: string): string {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if ((c >= 0x41 && c <= 0x5a) || c >= 0x80) return name.toLowerCase();
  }
  return name;
}

/** The headers the view reads (besides CLIENT_IP_SOURCE's header:<name>); no other is copied. */
const HEADERS_READ: ReadonlySet<string> = new Set([
  'authorization',
  'x-request-id',
  'x-envoy-auth-partial-body',
  'content-length',
  'transfer-encoding',
  'x-forwarded-for',
]);

/**
 * The headers the view reads, from both places Envoy may send them: HttpRequest.headers (a map) and
 * HttpRequest.header_map (a list, used with encode_raw_headers). A name seen more than once, in
 * either or across both, is joined by "," as Envoy joins repeated headers. Envoy sends every header
 * of the request; copying only these keeps the others off every check's bill.
 */
function requestHeaders(http: HttpRequestMessage | undefined, source: ClientIpSource): RequestHeaders {
  const headers = new Map<string, string>();
  const sourceHeader = source.kind === 'header' ? source.name : undefined;
  const map = record(http?.headers);
  if (map !== undefined) {
    // for…in, not Object.keys: no array of every header name on every check. A decoded map has no inherited members.
    for (const name in map) {
      const value = map[name];
      const key = headerRead(name, sourceHeader);
      if (key !== undefined && typeof value === 'string') addHeader(headers, key, value);
    }
  }
  const list: unknown = record(http?.header_map)?.['headers'];
  if (Array.isArray(list)) {
    for (const entry of list as unknown[]) {
      const key = isRecord(entry) && typeof entry['key'] === 'string' ? headerRead(entry['key'], sourceHeader) : undefined;
      if (key !== undefined) addHeader(headers, key, headerMapValue(entry as HeaderValueMessage));
    }
  }
  return headers;
}

/** The lower-case name of a header the view reads, else undefined. */
function headerRead(name: string, sourceHeader: string | undefined): string | undefined {
  const key = lowerCased(name);
  return HEADERS_READ.has(key) || key === sourceHeader ? key : undefined;
}

/** The one context extension the view reads: a route's opt-out of body credentials. */
const BODY_CREDENTIALS_EXTENSION = 'body_credentials';

/** The header and context extension names the view reads under CLIENT_IP_SOURCE: all a reader of the wire need keep. */
export function namesReadBy(source: ClientIpSource): NamesRead {
  const sourceHeader = source.kind === 'header' ? source.name : undefined;
  return {
    header: (name) => headerRead(name, sourceHeader) !== undefined,
    headerNames: [...HEADERS_READ, ...(sourceHeader === undefined ? [] : [sourceHeader])],
    contextExtension: (name) => name === BODY_CREDENTIALS_EXTENSION,
  };
}

function addHeader(headers: Map<string, string>, key: string, value: string): void {
  const earlier = headers.get(key);
  headers.set(key, earlier === undefined ? value : `${earlier},${value}`);
}

function commaList(value: string | undefined): string[] {
  return value === undefined ? [] : value.split(',').map(trimOws);
}

/** The request says a body exists even though Envoy sent none (Envoy's with_request_body is off). */
function lengthDeclared(http: HttpRequestMessage | undefined, headers: RequestHeaders): boolean {
  const contentLength = commaList(headers.get('content-length')).some((part) => /^\d+$/.test(part) && Number(part) > 0);
  const size: unknown = http?.size;
  // HttpRequest.size is an int64: a decimal string (longs: String), -1 when unknown.
  const sized =
    (typeof size === 'string' && /^\d+$/.test(size) && /[1-9]/.test(size)) || (typeof size === 'number' && size > 0);
  const chunked = commaList(headers.get('transfer-encoding')).some((coding) => coding.toLowerCase() === 'chunked');
  return contentLength || sized || chunked;
}

/**
 * The body from raw_body (Envoy's pack_as_bytes) when present, else from body (text). One larger
 * than maxBytes is neither decoded nor parsed: its size is all that is known of it.
 */
function bodyView(http: HttpRequestMessage | undefined, headers: RequestHeaders, maxBytes: number): BodyView {
  const raw = nonEmptyBytes(http?.raw_body);
  if (raw !== undefined) {
    if (raw.length > maxBytes) return { kind: 'too-large', bytes: raw.length, maxBytes };
    try {
      return { kind: 'text', text: UTF8.decode(raw) };
    } catch {
      return { kind: 'not-utf8' };
    }
  }
  const text = nonEmptyText(http?.body);
  if (text !== undefined) {
    // Its size as Envoy received it, in UTF-8. A UTF-16 unit takes at most 3 bytes, so a text that
    // cannot be too large is not measured.
    if (text.length * 3 > maxBytes) {
      const bytes = Buffer.byteLength(text, 'utf8');
      if (bytes > maxBytes) return { kind: 'too-large', bytes, maxBytes };
    }
    return { kind: 'text', text };
  }
  return { kind: 'empty', lengthDeclared: lengthDeclared(http, headers) };
}

/** The client address text chosen by CLIENT_IP_SOURCE; parsing it is the decision's job. */
function clientAddress(request: CheckRequestMessage | undefined, headers: RequestHeaders, source: ClientIpSource): string | undefined {
  switch (source.kind) {
    case 'peer': {
      // AttributeContext.source: the downstream connection's peer; a pipe has no IP.
      const address = record(record(record(record(request?.attributes)?.['source'])?.['address'])?.['socket_address']);
      return nonEmptyText(address?.['address']);
    }
    case 'xff':
      return forwardedForEntry(headers.get('x-forwarded-for'), source.trustedHops);
    case 'header': {
      const value = headers.get(source.name);
      return value === undefined ? undefined : nonEmptyText(trimOws(value));
    }
  }
}

/** A route opts out of body credentials for body-less requests with the per-route context extension. */
function bodyCredentialsPolicy(request: CheckRequestMessage | undefined): BodyCredentialsPolicy {
  const extensions = record(record(request?.attributes)?.['context_extensions']);
  return extensions?.[BODY_CREDENTIALS_EXTENSION] === 'optional' ? 'optional' : 'required';
}

/**
 * Turns a decoded CheckRequest into the decision's input. Pure, and total: a field that is missing,
 * null or of the wrong type reads as absent, so a malformed request is denied, never thrown on.
 */
export function viewCheckRequest(request: CheckRequestMessage | null | undefined, options: RequestViewOptions): CheckRequestView {
  const checkRequest = isRecord(request) ? request : undefined;
  const http = record(record(record(checkRequest?.attributes)?.['request'])?.['http']) as HttpRequestMessage | undefined;
  const headers = requestHeaders(http, options.clientIpSource);
  const partialFlag = headers.get('x-envoy-auth-partial-body');
  const partial = partialFlag !== undefined && commaList(partialFlag).some((flag) => flag.toLowerCase() === 'true');
  return {
    input: {
      authorization: headers.get('authorization'),
      clientAddress: clientAddress(checkRequest, headers, options.clientIpSource),
      body: bodyView(http, headers, options.maxBodyBytes),
      bodyPartial: partial,
      bodyCredentials: bodyCredentialsPolicy(checkRequest),
    },
    requestId: clipForLog(nonEmptyText(headers.get('x-request-id')) ?? nonEmptyText(http?.id)),
  };
}
