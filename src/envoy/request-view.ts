import type { ClientIpSource } from '../config.js';
import type { BodyCredentialsPolicy, BodyView, CheckInput } from '../decision/types.js';
import { clipForLog } from '../common/log-text.js';
import { forwardedForEntry } from '../allowlist/client-ip.js';
import type { NamesRead } from './check-request-reader.js';
import type { CheckRequestMessage, HeaderValueMessage, HttpRequestMessage } from './messages.js';

export interface RequestViewOptions {
  readonly clientIpSource: ClientIpSource;
  readonly maxBodyBytes: number;
}

export interface CheckRequestView {
  readonly input: CheckInput;
  /** `x-request-id`, else Envoy's HttpRequest.id: our log line correlates with Envoy's. */
  readonly requestId: string | undefined;
}

/** Lower-case names to values; repeated headers joined by ",". */
type RequestHeaders = ReadonlyMap<string, string>;

// Bytes that are not UTF-8 are refused, not replaced: a replaced body could still parse as JSON.
// The BOM is kept so that `raw_body` and `body` yield the same text for the same bytes.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
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

/** raw_value (encode_raw_headers) as latin1: a non-ASCII byte never decodes into the ASCII of a site id or key. */
function headerMapValue(header: HeaderValueMessage): string {
  const raw = nonEmptyBytes(header.raw_value);
  if (raw !== undefined) return Buffer.from(raw.buffer, raw.byteOffset, raw.length).toString('latin1');
  return typeof header.value === 'string' ? header.value : '';
}

/** toLowerCase without a new string for a name already lower case, as Envoy's are. */
function lowerCased(name: string): string {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if ((c >= 0x41 && c <= 0x5a) || c >= 0x80) return name.toLowerCase();
  }
  return name;
}

const HEADERS_READ: ReadonlySet<string> = new Set([
  'authorization',
  'x-request-id',
  'x-envoy-auth-partial-body',
  'content-length',
  'transfer-encoding',
  'x-forwarded-for',
]);

/** HttpRequest.headers and header_map (encode_raw_headers); a repeated name is joined by "," as Envoy joins them. */
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

function headerRead(name: string, sourceHeader: string | undefined): string | undefined {
  const key = lowerCased(name);
  return HEADERS_READ.has(key) || key === sourceHeader ? key : undefined;
}

const BODY_CREDENTIALS_EXTENSION = 'body_credentials';

/** What a reader of the wire need keep: the header and context extension names the view reads. */
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

/** raw_body (pack_as_bytes), else body; one larger than maxBytes is neither decoded nor parsed. */
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
    // Measured in UTF-8 only when it could be too large: a UTF-16 unit takes at most 3 bytes.
    if (text.length * 3 > maxBytes) {
      const bytes = Buffer.byteLength(text, 'utf8');
      if (bytes > maxBytes) return { kind: 'too-large', bytes, maxBytes };
    }
    return { kind: 'text', text };
  }
  return { kind: 'empty', lengthDeclared: lengthDeclared(http, headers) };
}

/** The client address text CLIENT_IP_SOURCE names; the decision parses it. */
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

function bodyCredentialsPolicy(request: CheckRequestMessage | undefined): BodyCredentialsPolicy {
  const extensions = record(record(request?.attributes)?.['context_extensions']);
  return extensions?.[BODY_CREDENTIALS_EXTENSION] === 'optional' ? 'optional' : 'required';
}

/** Pure and total: a field missing, null or of the wrong type reads as absent, so a malformed request is denied. */
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
