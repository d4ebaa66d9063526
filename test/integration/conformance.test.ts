import * as grpc from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/grpc-js';
import { loadSync, type PackageDefinition } from '@grpc/proto-loader';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { checkPolicies } from '../../src/envoy/check-policies.js';
import { loadConfig } from '../../src/config.js';
import { decide } from '../../src/decision/decide.js';
import { startGrpcServer, type AuthzGrpcServer } from '../../src/envoy/grpc-server.js';
import type { CheckRequestMessage } from '../../src/envoy/messages.js';
import { AUTHORIZATION_PROTO_FILE, AUTHORIZATION_SERVICE, AUTHORIZATION_SERVICE_NAME, PROTO_LOADER_OPTIONS } from '../../src/envoy/proto.js';
import { viewCheckRequest } from '../../src/envoy/request-view.js';
import { PROTO_DIR } from '../../src/paths.js';
import { createLogger } from '../../src/observe/logger.js';
import { checkRequest, checkResponseBytes, UPSTREAM_INCLUDE_DIRS, type CheckArguments } from '../support/envoy-client.js';
import { snapshotOf } from '../support/snapshot.js';

/**
 * Our proto/ against Envoy's full upstream definitions (from @grpc/grpc-js-xds/deps): the same names
 * and numbers, and every field we read or write survives the trip across the two.
 */
const upstream = loadSync(AUTHORIZATION_PROTO_FILE, { ...PROTO_LOADER_OPTIONS, enums: String, includeDirs: UPSTREAM_INCLUDE_DIRS });
const ours = loadSync(AUTHORIZATION_PROTO_FILE, { ...PROTO_LOADER_OPTIONS, includeDirs: [PROTO_DIR] });
const upstreamCheck = (upstream[AUTHORIZATION_SERVICE_NAME] as Record<string, MethodDefinition<object, object>>)['Check']!;
const ourCheck = AUTHORIZATION_SERVICE.Check;
const MAX_BODY_BYTES = loadConfig({}).maxBodyBytes;

// ---- Descriptors: a small index over proto-loader's DescriptorProto objects. ----

interface FieldDescriptor {
  readonly name: string;
  readonly number: number;
  readonly label: string;
  readonly type: string;
  readonly typeName: string;
}
interface MessageDescriptor {
  readonly field: readonly FieldDescriptor[];
  readonly nestedType: readonly (MessageDescriptor & { readonly name: string })[];
  readonly enumType: readonly (EnumDescriptor & { readonly name: string })[];
}
interface EnumDescriptor {
  readonly value: readonly { readonly name: string; readonly number: number }[];
}
type Descriptor = { readonly kind: 'message'; readonly message: MessageDescriptor } | { readonly kind: 'enum'; readonly enumType: EnumDescriptor };

/** Every message and enum of a package definition by fully-qualified name, nested ones included. */
function descriptorIndex(definition: PackageDefinition): Map<string, Descriptor> {
  const index = new Map<string, Descriptor>();
  const addMessage = (name: string, message: MessageDescriptor): void => {
    index.set(name, { kind: 'message', message });
    for (const nested of message.nestedType) addMessage(`${name}.${nested.name}`, nested);
    for (const nested of message.enumType) index.set(`${name}.${nested.name}`, { kind: 'enum', enumType: nested });
  };
  for (const [name, entry] of Object.entries(definition)) {
    const { format, type } = entry as { format?: string; type?: unknown };
    if (format === 'Protocol Buffer 3 DescriptorProto') addMessage(name, type as MessageDescriptor);
    if (format === 'Protocol Buffer 3 EnumDescriptorProto') index.set(name, { kind: 'enum', enumType: type as EnumDescriptor });
  }
  return index;
}

/** Protobuf name resolution: innermost scope first, outwards to the root. */
function resolve(index: Map<string, Descriptor>, scope: string, typeName: string): string {
  if (typeName.startsWith('.')) return typeName.slice(1);
  const parts = scope.split('.');
  for (let i = parts.length; i >= 0; i--) {
    const candidate = [...parts.slice(0, i), typeName].join('.');
    if (index.has(candidate)) return candidate;
  }
  throw new Error(`cannot resolve ${typeName} from ${scope}`);
}

const ourIndex = descriptorIndex(ours);
const upstreamIndex = descriptorIndex(upstream);

describe('proto/ matches Envoy upstream definitions', () => {
  for (const [name, descriptor] of ourIndex) {
    it(`${name}: every ${descriptor.kind === 'message' ? 'field' : 'value'} has the upstream name, number and type`, () => {
      const theirs = upstreamIndex.get(name);
      assert.ok(theirs, `${name} does not exist upstream`);
      assert.equal(theirs.kind, descriptor.kind);
      if (descriptor.kind === 'enum' && theirs.kind === 'enum') {
        for (const value of descriptor.enumType.value) {
          assert.deepEqual(theirs.enumType.value.find((v) => v.name === value.name), { ...value, options: null }, `${name}.${value.name}`);
        }
        return;
      }
      if (descriptor.kind !== 'message' || theirs.kind !== 'message') return;
      for (const field of descriptor.message.field) {
        const their: FieldDescriptor | undefined = theirs.message.field.find((f) => f.number === field.number);
        assert.ok(their, `${name}.${field.name} (${field.number}) does not exist upstream`);
        assert.deepEqual(
          [their.name, their.label, their.type],
          [field.name, field.label, field.type],
          `${name}.${field.name}: name, label, type`,
        );
        if (field.typeName !== '') {
          assert.equal(
            resolve(upstreamIndex, name, their.typeName),
            resolve(ourIndex, name, field.typeName),
            `${name}.${field.name}: message or enum type`,
          );
        }
      }
    });
  }
});

// ---- Requests: upstream encodes, we decode. ----

const rawAuthorization = Buffer.from('1001:0f0e0d0c-0b0a-4908-8706-050403020100', 'latin1');
const rawBody = Buffer.from('{"siteid":1001,"apikey":"0f0e0d0c-0b0a-4908-8706-050403020100","name":"Zoë"}', 'utf8');

/** A CheckRequest as rich as Envoy sends, including fields our proto/ leaves out. */
const upstreamRequest = {
  attributes: {
    source: {
      address: { socket_address: { protocol: 'TCP', address: '203.0.113.7', port_value: 40312, resolver_name: '', ipv4_compat: true } },
      service: 'partner-edge',
      labels: { zone: 'eu-west-1a' },
      principal: 'spiffe://example.org/partner',
      certificate: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
    },
    destination: {
      address: { socket_address: { address: '10.0.0.5', port_value: 8443 } },
      principal: 'spiffe://example.org/api',
    },
    request: {
      time: { seconds: '1767225600', nanos: 123456789 },
      http: {
        id: '8161713543458742843',
        method: 'POST',
        headers: {
          ':method': 'POST',
          ':path': '/v1/orders?page=2',
          'content-type': 'application/json',
          'x-request-id': 'f3b6e1c2-req',
          'x-forwarded-for': '192.0.2.1, 203.0.113.7',
          'x-unicode': 'Zoë ☃',
        },
        header_map: {
          headers: [
            { key: 'authorization', raw_value: rawAuthorization },
            { key: 'x-binary', raw_value: Buffer.from([0x00, 0x7f, 0x80, 0xff]) },
            { key: 'x-text', value: 'plain' },
          ],
        },
        path: '/v1/orders?page=2',
        host: 'api.example.com',
        scheme: 'https',
        query: 'page=2',
        fragment: '',
        size: '9007199254740993',
        protocol: 'HTTP/2',
        body: '{"siteid":1001}',
        raw_body: rawBody,
      },
    },
    context_extensions: { body_credentials: 'optional', virtual_host: 'partners' },
    metadata_context: {
      filter_metadata: { 'envoy.filters.http.jwt_authn': { fields: { sub: { stringValue: 'partner' }, n: { numberValue: 3 } } } },
    },
    route_metadata_context: { filter_metadata: { 'com.example.route': { fields: { tier: { stringValue: 'gold' } } } } },
    tls_session: { sni: 'api.example.com' },
  },
};

function upstreamToOurs(request: object): CheckRequestMessage {
  return ourCheck.requestDeserialize(upstreamCheck.requestSerialize(request));
}

describe('a CheckRequest encoded with Envoy upstream protos decodes with ours', () => {
  const decoded = upstreamToOurs(upstreamRequest);
  const http = decoded.attributes?.request?.http;

  it('keeps the source socket address', () => {
    assert.equal(decoded.attributes?.source?.address?.socket_address?.address, '203.0.113.7');
  });

  it('keeps HttpRequest id, method, path, host and the int64 size exactly', () => {
    assert.deepEqual(
      [http?.id, http?.method, http?.path, http?.host, http?.size],
      ['8161713543458742843', 'POST', '/v1/orders?page=2', 'api.example.com', '9007199254740993'],
    );
  });

  it('keeps the headers map, unicode included', () => {
    assert.deepEqual(http?.headers, upstreamRequest.attributes.request.http.headers);
  });

  it('keeps header_map entries with raw_value bytes and value text', () => {
    assert.deepEqual(
      http?.header_map?.headers?.map((h) => [h.key, h.value, Buffer.from(h.raw_value ?? []).toString('hex')]),
      [
        ['authorization', '', rawAuthorization.toString('hex')],
        ['x-binary', '', '007f80ff'],
        ['x-text', 'plain', ''],
      ],
    );
  });

  it('keeps body and raw_body', () => {
    assert.equal(http?.body, '{"siteid":1001}');
    assert.ok(http?.raw_body instanceof Uint8Array);
    assert.equal(Buffer.from(http.raw_body).toString('hex'), rawBody.toString('hex'));
  });

  it('keeps context_extensions', () => {
    assert.deepEqual(decoded.attributes?.context_extensions, { body_credentials: 'optional', virtual_host: 'partners' });
  });

  it('reads the same check input the decision gets', () => {
    const view = viewCheckRequest(decoded, { clientIpSource: { kind: 'peer' }, maxBodyBytes: MAX_BODY_BYTES });
    assert.deepEqual(view.input, {
      authorization: rawAuthorization.toString('latin1'),
      clientAddress: '203.0.113.7',
      body: { kind: 'text', text: rawBody.toString('utf8') },
      bodyPartial: false,
      bodyCredentials: 'optional',
    });
    assert.equal(view.requestId, 'f3b6e1c2-req');
    assert.equal(viewCheckRequest(decoded, { clientIpSource: { kind: 'xff', trustedHops: 1 }, maxBodyBytes: MAX_BODY_BYTES }).input.clientAddress, '192.0.2.1');
  });

  it('reads a pipe peer as having no client address', () => {
    const pipe = upstreamToOurs({ attributes: { source: { address: { pipe: { path: '/run/envoy.sock', mode: 0o600 } } } } });
    assert.equal(pipe.attributes?.source?.address?.pipe?.path, '/run/envoy.sock');
    assert.equal(viewCheckRequest(pipe, { clientIpSource: { kind: 'peer' }, maxBodyBytes: MAX_BODY_BYTES }).input.clientAddress, undefined);
  });

  it('reads an empty CheckRequest as an empty input', () => {
    const view = viewCheckRequest(upstreamToOurs({}), { clientIpSource: { kind: 'peer' }, maxBodyBytes: MAX_BODY_BYTES });
    assert.deepEqual(view.input, {
      authorization: undefined,
      clientAddress: undefined,
      body: { kind: 'empty', lengthDeclared: false },
      bodyPartial: false,
      bodyCredentials: 'required',
    });
  });
});

// ---- Responses: the bytes our server sends, as Envoy's upstream protos decode them. ----

const RESPONSE_KEY = '0f0e0d0c-0b0a-4908-8706-050403020100';
const MAX_SITE = '9223372036854775807';
const NOW = Date.parse('2026-06-01T00:00:00Z');
const GUIDE = 'https://developers.example.com/tokens';
const responseSnapshot = snapshotOf(
  [
    { siteId: MAX_SITE, keys: [{ key: RESPONSE_KEY, keyId: '12' }], cidrs: ['203.0.113.0/24', '2001:db8::/48'] },
    { siteId: '1005', keys: [{ key: RESPONSE_KEY, keyId: '15' }], cidrs: ['203.0.113.0/24'] },
  ],
  [{ id: '3', from: NOW - 3_600_000, until: NOW + 3_600_000, siteIds: new Set(['1005']), dryRun: false }],
);
// As serve builds them: Deprecation, Sunset and the guide's Link on allowed responses, Authorization stripped.
const responsePolicies = checkPolicies(
  loadConfig({ APIKEY_DEPRECATED_AT: '2026-11-01T00:00:00Z', MIGRATION_GUIDE_URL: GUIDE, STRIP_AUTHORIZATION: 'true' }),
);

/** The empty fields proto3 decodes with defaults: true, written out so that each expected message is whole. */
const option = (key: string, value: string, appendAction: string) => ({
  header: { key, value, raw_value: Buffer.alloc(0) },
  append: null,
  append_action: appendAction,
  keep_empty_value: false,
});
const denied = (grpc: number, code: string, http: string, body: string, headers: readonly unknown[] = []) => ({
  status: { details: [], code: grpc, message: code },
  dynamic_metadata: null,
  denied_response: { headers: [option('content-type', 'application/json', 'OVERWRITE_IF_EXISTS_OR_ADD'), ...headers], status: { code: http }, body },
  http_response: 'denied_response',
});

describe('the CheckResponse bytes the gRPC server sends, decoded with Envoy upstream protos', () => {
  let server: AuthzGrpcServer;
  let client: grpc.Client;

  before(async () => {
    server = await startGrpcServer({
      bindAddress: '127.0.0.1',
      port: 0,
      maxBodyBytes: MAX_BODY_BYTES,
      maxConnections: 16,
      logger: createLogger('silent'),
      authorization: {
        clientIpSource: { kind: 'peer' },
        maxBodyBytes: MAX_BODY_BYTES,
        allowedResponse: responsePolicies.allowedResponse,
        authorize: (input) => decide(input, responseSnapshot, NOW, responsePolicies.sunset),
        logger: createLogger('silent'),
      },
    });
    client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  });

  after(async () => {
    client?.close();
    await server?.shutdown(1_000);
  });

  /** One Check as Envoy encodes it; the answer's bytes as they came off the socket, then decoded by Envoy's protos. */
  async function sent(args: CheckArguments): Promise<unknown> {
    return upstreamCheck.responseDeserialize(await checkResponseBytes(client, upstreamCheck.requestSerialize(checkRequest(args) as object)));
  }
  const credentials = (siteId: string, key = RESPONSE_KEY) => ({ authorization: `${siteId}:${key}`, body: `{"siteid":${siteId},"apikey":"${key}"}` });

  it('allow: status 0, x-site-id overwriting, the sunset headers, Authorization removed, site and key ids as metadata', async () => {
    assert.deepEqual(await sent(credentials(MAX_SITE)), {
      status: { details: [], code: 0, message: '' },
      dynamic_metadata: {
        fields: {
          site_id: { stringValue: '9223372036854775807', kind: 'stringValue' },
          auth_method: { stringValue: 'api_key', kind: 'stringValue' },
          key_id: { stringValue: '12', kind: 'stringValue' },
        },
      },
      ok_response: {
        // append stays unset (null) so that Envoy applies append_action.
        headers: [option('x-site-id', '9223372036854775807', 'OVERWRITE_IF_EXISTS_OR_ADD')],
        headers_to_remove: ['authorization'],
        response_headers_to_add: [
          option('deprecation', '@1793491200', 'OVERWRITE_IF_EXISTS_OR_ADD'),
          option('sunset', 'Thu, 31 Dec 2026 23:59:59 GMT', 'OVERWRITE_IF_EXISTS_OR_ADD'),
          option('link', '<https://developers.example.com/tokens>; rel="deprecation"', 'APPEND_IF_EXISTS_OR_ADD'),
          option('link', '<https://developers.example.com/tokens>; rel="sunset"', 'APPEND_IF_EXISTS_OR_ADD'),
        ],
        query_parameters_to_set: [],
        query_parameters_to_remove: [],
        // The deprecated OkHttpResponse.dynamic_metadata stays unset.
        dynamic_metadata: null,
      },
      http_response: 'ok_response',
    });
  });

  const denials: ReadonlyArray<{ readonly name: string; readonly args: CheckArguments; readonly expected: unknown }> = [
    {
      name: '108: UNAUTHENTICATED, HTTP 401',
      args: { authorization: `${MAX_SITE};${RESPONSE_KEY}` },
      expected: denied(16, 'HEADER_INVALID', 'Unauthorized', '{"error":{"id":108,"message":"Site ID or API key is invalid or missing in the header"}}'),
    },
    {
      name: '101: UNAUTHENTICATED, HTTP 401',
      args: credentials('4242'),
      expected: denied(16, 'SITE_INVALID', 'Unauthorized', '{"error":{"id":101,"message":"Site ID 4242 is invalid"}}'),
    },
    {
      name: '103: PERMISSION_DENIED, HTTP 403',
      args: { ...credentials(MAX_SITE), ip: '2001:db9::9' },
      expected: denied(
        7,
        'IP_NOT_WHITELISTED',
        'Forbidden',
        '{"error":{"id":103,"message":"IP address 2001:db9::9 is not whitelisted for site ID 9223372036854775807"}}',
      ),
    },
    {
      name: '102: UNAUTHENTICATED, HTTP 401, the key masked',
      args: credentials(MAX_SITE, '00000000-0000-4000-8000-0000000fedcb'),
      expected: denied(16, 'API_KEY_INVALID', 'Unauthorized', '{"error":{"id":102,"message":"API key *****fedcb is invalid"}}'),
    },
    {
      name: '104: UNAUTHENTICATED, HTTP 401, the rule named',
      args: { ...credentials(MAX_SITE), body: `{"siteid":${MAX_SITE},"apikey":"${RESPONSE_KEY}","ApiKey":"x"}` },
      expected: denied(16, 'BODY_CREDENTIALS_INVALID', 'Unauthorized', '{"error":{"id":104,"message":"Request body has more than one apikey"}}'),
    },
    {
      name: "105: UNAUTHENTICATED, HTTP 401, the brownout and the guide named, Retry-After at the brownout's end and the guide's Link",
      args: credentials('1005'),
      expected: denied(
        16,
        'API_KEY_AUTH_RETIRED',
        'Unauthorized',
        '{"error":{"id":105,"message":"API key authentication is switched off until 2026-06-01T01:00:00Z for a scheduled brownout ahead of its retirement on 2026-12-31; migrate to token-based authentication; migration guide: https://developers.example.com/tokens"}}',
        [
          option('retry-after', 'Mon, 01 Jun 2026 01:00:00 GMT', 'OVERWRITE_IF_EXISTS_OR_ADD'),
          option('link', '<https://developers.example.com/tokens>; rel="deprecation"', 'APPEND_IF_EXISTS_OR_ADD'),
          option('link', '<https://developers.example.com/tokens>; rel="sunset"', 'APPEND_IF_EXISTS_OR_ADD'),
        ],
      ),
    },
  ];
  for (const { name, args, expected } of denials) {
    it(`deny ${name}, JSON content type and the exact body, no metadata`, async () => {
      assert.deepEqual(await sent(args), expected);
    });
  }
});

describe('a CheckResponse from Envoy upstream protos decodes with ours', () => {
  it('a response Envoy could send back decodes with ours (the client script reads it)', () => {
    const upstreamResponse = {
      status: { code: 16, message: 'HEADER_INVALID' },
      denied_response: {
        status: { code: 'Unauthorized' },
        headers: [{ header: { key: 'content-type', value: 'application/json' }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }],
        body: '{"error":{"id":108,"message":"m"}}',
      },
    };
    const decoded = ourCheck.responseDeserialize(upstreamCheck.responseSerialize(upstreamResponse)) as unknown as {
      status: { code: number; message: string };
      http_response: string;
      denied_response: { status: { code: number }; headers: { header: { key: string; value: string }; append_action: number }[]; body: string };
    };
    assert.deepEqual(decoded.status, { code: 16, message: 'HEADER_INVALID' });
    assert.equal(decoded.http_response, 'denied_response');
    assert.equal(decoded.denied_response.status.code, 401);
    assert.equal(decoded.denied_response.headers[0]?.append_action, 2);
    assert.equal(decoded.denied_response.body, upstreamResponse.denied_response.body);
  });
});
