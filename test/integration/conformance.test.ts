import type { MethodDefinition } from '@grpc/grpc-js';
import { loadSync, type PackageDefinition } from '@grpc/proto-loader';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import type { Decision, Denial } from '../../src/decision/types.js';
import { toCheckResponse } from '../../src/envoy/check-response.js';
import type { CheckRequestMessage } from '../../src/envoy/messages.js';
import { AUTHORIZATION_PROTO_FILE, AUTHORIZATION_SERVICE, AUTHORIZATION_SERVICE_NAME, PROTO_LOADER_OPTIONS } from '../../src/envoy/proto.js';
import { viewCheckRequest } from '../../src/envoy/request-view.js';
import { PROTO_DIR } from '../../src/paths.js';
import { UPSTREAM_INCLUDE_DIRS } from '../support/envoy-client.js';

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

// ---- Responses: we encode, upstream decodes. ----

interface UpstreamHeaderOption {
  readonly header: { readonly key: string; readonly value: string; readonly raw_value: Buffer };
  readonly append: { readonly value: boolean } | null;
  readonly append_action: string;
  readonly keep_empty_value: boolean;
}
interface UpstreamCheckResponse {
  readonly status: { readonly code: number; readonly message: string; readonly details: readonly unknown[] };
  readonly http_response?: 'ok_response' | 'denied_response';
  readonly ok_response?: {
    readonly headers: readonly UpstreamHeaderOption[];
    readonly headers_to_remove: readonly string[];
    readonly response_headers_to_add: readonly UpstreamHeaderOption[];
    readonly dynamic_metadata: unknown;
  };
  readonly denied_response?: {
    readonly status: { readonly code: string };
    readonly headers: readonly UpstreamHeaderOption[];
    readonly body: string;
  };
  readonly dynamic_metadata: { readonly fields: Readonly<Record<string, { readonly stringValue?: string; readonly kind?: string }>> } | null;
}

function oursToUpstream(decision: Decision): UpstreamCheckResponse {
  return upstreamCheck.responseDeserialize(ourCheck.responseSerialize(toCheckResponse(decision))) as UpstreamCheckResponse;
}

const denials: readonly { readonly denial: Denial; readonly grpc: number; readonly http: string }[] = [
  { denial: { errorId: 108, rule: 'header-malformed' }, grpc: 16, http: 'Unauthorized' },
  { denial: { errorId: 101, siteId: '4242', maskedKey: '*****fedcb' }, grpc: 16, http: 'Unauthorized' },
  { denial: { errorId: 103, siteId: '1001', clientIp: '2001:db8::9', maskedKey: '*****fedcb' }, grpc: 7, http: 'Forbidden' },
  { denial: { errorId: 102, siteId: '1001', maskedKey: '*****fedcb' }, grpc: 16, http: 'Unauthorized' },
  { denial: { errorId: 104, siteId: '1001', keyId: '7', maskedKey: '*****fedcb', rule: 'apikey-duplicate' }, grpc: 16, http: 'Unauthorized' },
];

describe('a CheckResponse encoded with our protos decodes with Envoy upstream protos', () => {
  it('allow: status 0, x-site-id with OVERWRITE_IF_EXISTS_OR_ADD and no append, dynamic metadata', () => {
    const response = oursToUpstream({ outcome: 'allow', siteId: '9223372036854775807', keyId: '12' });
    assert.deepEqual(response.status, { code: 0, message: '', details: [] });
    assert.equal(response.http_response, 'ok_response');
    const headers = response.ok_response?.headers ?? [];
    assert.equal(headers.length, 1);
    assert.deepEqual(headers[0]?.header, { key: 'x-site-id', value: '9223372036854775807', raw_value: Buffer.alloc(0) });
    assert.equal(headers[0]?.append_action, 'OVERWRITE_IF_EXISTS_OR_ADD');
    assert.equal(headers[0]?.append, null, 'append must stay unset so Envoy applies append_action');
    assert.deepEqual(response.ok_response?.headers_to_remove, []);
    assert.deepEqual(response.ok_response?.response_headers_to_add, []);
    assert.equal(response.ok_response?.dynamic_metadata, null, 'the deprecated OkHttpResponse.dynamic_metadata stays unset');
    assert.deepEqual(response.dynamic_metadata, {
      fields: { site_id: { stringValue: '9223372036854775807', kind: 'stringValue' }, key_id: { stringValue: '12', kind: 'stringValue' } },
    });
  });

  for (const { denial, grpc, http } of denials) {
    it(`deny ${denial.errorId}: status ${grpc}, HTTP ${http}, JSON content type and the exact body`, () => {
      const decision: Decision = { outcome: 'deny', denial };
      const response = oursToUpstream(decision);
      const sent = toCheckResponse(decision);
      assert.ok('denied_response' in sent);
      assert.equal(response.status.code, grpc);
      assert.equal(response.status.message, sent.status.message);
      assert.equal(response.http_response, 'denied_response');
      assert.equal(response.denied_response?.status.code, http);
      assert.deepEqual(
        response.denied_response?.headers.map((h) => [h.header.key, h.header.value, h.append_action, h.append]),
        [['content-type', 'application/json', 'OVERWRITE_IF_EXISTS_OR_ADD', null]],
      );
      assert.equal(response.denied_response?.body, sent.denied_response.body);
      assert.equal((JSON.parse(response.denied_response?.body ?? '{}') as { error: { id: number } }).error.id, denial.errorId);
      assert.equal(response.dynamic_metadata, null);
    });
  }

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
