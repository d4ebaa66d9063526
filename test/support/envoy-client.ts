import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * A client built from Envoy's own upstream protos (shipped in @grpc/grpc-js-xds), so tests talk to
 * the service exactly as Envoy's wire format defines it, not as our minimal copy does.
 */
const depsDir = join(dirname(createRequire(import.meta.url).resolve('@grpc/grpc-js-xds/package.json')), 'deps');
export const UPSTREAM_INCLUDE_DIRS = ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((d) => join(depsDir, d));

export const upstreamDefinition = protoLoader.loadSync('envoy/service/auth/v3/external_auth.proto', {
  includeDirs: UPSTREAM_INCLUDE_DIRS,
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});

/** Envoy's own Check method: what Envoy's decoder makes of the bytes a server sends, and the bytes Envoy sends. */
export const upstreamCheckMethod = (upstreamDefinition['envoy.service.auth.v3.Authorization'] as Record<string, grpc.MethodDefinition<object, object>>)['Check']!;

/** One Check sent as these bytes; the response message exactly as it arrived, not decoded on our side. */
export function checkResponseBytes(client: grpc.Client, requestBytes: Buffer): Promise<Buffer> {
  return new Promise((resolveBytes, reject) =>
    client.makeUnaryRequest(
      upstreamCheckMethod.path,
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => bytes,
      requestBytes,
      new grpc.Metadata(),
      { deadline: Date.now() + 5_000 },
      (error: grpc.ServiceError | null, bytes?: Buffer) => (error || bytes === undefined ? reject(error) : resolveBytes(bytes)),
    ),
  );
}

export interface UpstreamCheckResponse {
  status: { code: number; message: string };
  http_response: 'ok_response' | 'denied_response' | undefined;
  ok_response?: { headers: Array<{ header: { key: string; value: string }; append_action: string; append: unknown }> };
  denied_response?: {
    status: { code: string };
    headers: Array<{ header: { key: string; value: string } }>;
    body: string;
  };
  dynamic_metadata?: { fields: Record<string, { stringValue?: string; string_value?: string }> };
}

export interface CheckArguments {
  readonly authorization?: string;
  readonly ip?: string;
  readonly body?: string;
  readonly headers?: Record<string, string>;
}

type CheckClient = grpc.Client & {
  Check(request: unknown, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, response: UpstreamCheckResponse) => void): void;
};

/** `grpc.use_local_subchannel_pool: 1` gives the client a connection of its own instead of a shared one. */
export function authorizationClient(target: string, options: grpc.ChannelOptions = {}, credentials = grpc.credentials.createInsecure()): CheckClient {
  const proto = grpc.loadPackageDefinition(upstreamDefinition) as unknown as {
    envoy: { service: { auth: { v3: { Authorization: new (target: string, credentials: grpc.ChannelCredentials, options: grpc.ChannelOptions) => CheckClient } } } };
  };
  return new proto.envoy.service.auth.v3.Authorization(target, credentials, options);
}

/** The CheckRequest Envoy sends for a partner's POST. */
export function checkRequest(args: CheckArguments): unknown {
  const headers: Record<string, string> = {
    ':method': 'POST',
    ':path': '/v1/orders',
    'content-type': 'application/json',
    'x-request-id': 'test-request',
    ...(args.authorization !== undefined ? { authorization: args.authorization } : {}),
    ...(args.body ? { 'content-length': String(Buffer.byteLength(args.body)) } : {}),
    ...args.headers,
  };
  return {
    attributes: {
      source: { address: { socket_address: { address: args.ip ?? '203.0.113.7', port_value: 40000 } } },
      request: { http: { method: 'POST', path: '/v1/orders', host: 'api.example.com', headers, body: args.body ?? '' } },
    },
  };
}

export function check(client: CheckClient, args: CheckArguments): Promise<UpstreamCheckResponse> {
  return new Promise((resolveCheck, reject) =>
    client.Check(checkRequest(args), { deadline: Date.now() + 5_000 }, (error, response) =>
      error ? reject(error) : resolveCheck(response),
    ),
  );
}

/** The outcome in the shape a test compares: 'allow', or the error id of the JSON body. */
export function verdict(response: UpstreamCheckResponse): 'allow' | number {
  if (response.http_response === 'ok_response' && response.status.code === 0) return 'allow';
  return (JSON.parse(response.denied_response?.body ?? '{}') as { error: { id: number } }).error.id;
}

const checkMethod = (upstreamDefinition['envoy.service.auth.v3.Authorization'] as protoLoader.ServiceDefinition)['Check'];

/** A CheckRequest's bytes on the wire, as Envoy's protos encode it: for calls made by hand (test/support/raw-grpc.ts). */
export function encodeCheckRequest(request: unknown): Buffer {
  if (checkMethod === undefined) throw new Error('Envoy protos define no Authorization/Check');
  return checkMethod.requestSerialize(request as object);
}

export function decodeCheckResponse(bytes: Buffer): UpstreamCheckResponse {
  if (checkMethod === undefined) throw new Error('Envoy protos define no Authorization/Check');
  return checkMethod.responseDeserialize(bytes) as UpstreamCheckResponse;
}

/**
 * A client for CheckRequests already encoded (encodeCheckRequest), on the same channel, and so the
 * same HTTP/2 connection, as `sharing`: a test that sends large requests many times encodes them
 * once, and its own CPU does not slow the calls it measures.
 */
export function preEncodedClient(sharing: grpc.Client): CheckClient {
  if (checkMethod === undefined) throw new Error('Envoy protos define no Authorization/Check');
  const PreEncoded = grpc.makeGenericClientConstructor(
    { Check: { ...checkMethod, requestSerialize: (bytes: Buffer) => bytes } } as grpc.ServiceDefinition,
    'Authorization',
  );
  return new PreEncoded('unused', grpc.credentials.createInsecure(), { channelOverride: sharing.getChannel() }) as unknown as CheckClient;
}
