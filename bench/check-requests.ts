import { upstreamCheckMethod } from '../test/support/envoy-client.js';

/** The bench's client address: every site the bench allows has it on its allowlist. */
export const BENCH_CLIENT_IP = '127.0.0.1';

/** What a request is sent to test: 'allow', or the error id of the denial it must get. */
export type ExpectedVerdict = 'allow' | 101 | 102 | 103 | 104 | 105 | 108;

export interface BenchRequest {
  readonly name: string;
  readonly expected: ExpectedVerdict;
  /** The CheckRequest message, encoded with Envoy's upstream protos (no gRPC prefix). */
  readonly message: Buffer;
}

export interface RequestCredentials {
  /** The Authorization header; absent for a request that has none. */
  readonly authorization?: string;
  /** The JSON body Envoy forwards (with_request_body, pack_as_bytes: raw_body). */
  readonly body: string;
  /** The downstream peer's address Envoy reports (CLIENT_IP_SOURCE=peer); BENCH_CLIENT_IP unless given. */
  readonly sourceAddress?: string;
}

const upstreamCheck = upstreamCheckMethod;

/**
 * A CheckRequest as Envoy's ext_authz filter sends it for a partner's POST behind deploy/envoy/envoy.yaml
 * (pack_as_bytes: the body in raw_body), encoded with Envoy's own upstream protos, so the bytes are
 * what Envoy would put on the wire, not what our minimal proto/ could express.
 */
export function encodeCheckRequest(credentials: RequestCredentials): Buffer {
  const body = Buffer.from(credentials.body, 'utf8');
  const headers: Record<string, string> = {
    ':authority': 'api.example.com',
    ':method': 'POST',
    ':path': '/v1/orders',
    ':scheme': 'https',
    accept: 'application/json',
    'content-type': 'application/json',
    'content-length': String(body.length),
    'user-agent': 'partner-client/2.3 (+https://partner.example)',
    'x-forwarded-proto': 'https',
    'x-request-id': '5e8c3f0a-2b7d-4c1e-9a6f-3d2b1c0e9f87',
    'x-envoy-expected-rq-timeout-ms': '15000',
    ...(credentials.authorization === undefined ? {} : { authorization: credentials.authorization }),
  };
  const request = {
    attributes: {
      source: { address: { socket_address: { address: credentials.sourceAddress ?? BENCH_CLIENT_IP, port_value: 51234 } } },
      destination: { address: { socket_address: { address: '10.0.0.5', port_value: 8443 } } },
      request: {
        time: { seconds: '1767225600', nanos: 123456789 },
        http: {
          id: '8161713543458742843',
          method: 'POST',
          headers,
          path: '/v1/orders',
          host: 'api.example.com',
          scheme: 'https',
          size: String(body.length),
          protocol: 'HTTP/1.1',
          raw_body: body,
        },
      },
    },
  };
  return upstreamCheck.requestSerialize(request);
}

/** The bytes of one gRPC message on an HTTP/2 stream: not compressed (0), length (uint32 BE), message. */
export function grpcFrame(message: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt8(0, 0);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** A partner's JSON body carrying the credentials, padded with order lines up to `totalBytes` when given. */
export function partnerBody(siteId: string, apiKey: string, totalBytes?: number): string {
  const order = { currency: 'EUR', items: [{ sku: 'A-1001', qty: 2, price: '19.90' }] };
  const plain = JSON.stringify({ siteid: Number(siteId), apikey: apiKey, order });
  if (totalBytes === undefined) return plain;
  // One more member whose string fills the rest exactly: {"siteid":…,"order":…,"note":"xxx…"}.
  const padding = totalBytes - Buffer.byteLength(plain) - ',"note":""'.length;
  if (padding < 0) throw new Error(`a body of ${totalBytes} bytes cannot hold the credentials`);
  const body = `${plain.slice(0, -1)},"note":"${'x'.repeat(padding)}"}`;
  if (Buffer.byteLength(body) !== totalBytes) throw new Error(`padded body is ${Buffer.byteLength(body)} bytes, not ${totalBytes}`);
  return body;
}

/** A body of the same order without credentials: a token names its site, so a token request needs none. */
export function tokenRequestBody(): string {
  return JSON.stringify({ order: { currency: 'EUR', items: [{ sku: 'A-1001', qty: 2, price: '19.90' }] } });
}

/** The decoded CheckResponse, for checking the verdict of bytes sent once with a real gRPC client. */
export function decodeCheckResponse(bytes: Buffer): unknown {
  return upstreamCheck.responseDeserialize(bytes);
}
