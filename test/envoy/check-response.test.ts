import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Decision, Denial } from '../../src/decision/types.js';
import { sunsetNotice, toCheckResponse } from '../../src/envoy/check-response.js';
import { HeaderAppendAction, type CheckResponseMessage } from '../../src/envoy/messages.js';
import { AUTHORIZATION_SERVICE } from '../../src/envoy/proto.js';
import { upstreamCheckMethod } from '../support/envoy-client.js';

const JSON_CONTENT_TYPE = {
  header: { key: 'content-type', value: 'application/json' },
  append_action: HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD,
};

interface EnvoyHeaderValueOption {
  readonly header: { readonly key: string; readonly value: string };
  readonly append: { readonly value: boolean } | null;
  readonly append_action: string;
}

/** The bytes the service puts on the wire for a response, decoded with Envoy's own upstream protos. */
function sentAsEnvoyReadsIt(response: CheckResponseMessage): { readonly ok_response?: { readonly headers: readonly EnvoyHeaderValueOption[] } } {
  return upstreamCheckMethod.responseDeserialize(AUTHORIZATION_SERVICE.Check.responseSerialize(response)) as {
    readonly ok_response?: { readonly headers: readonly EnvoyHeaderValueOption[] };
  };
}

interface DenialCase {
  readonly name: string;
  readonly denial: Denial;
  readonly grpc: number;
  readonly code: string;
  readonly http: number;
  readonly body: string;
}

const denials: readonly DenialCase[] = [
  {
    name: '108 (header invalid) is UNAUTHENTICATED with HTTP 401',
    denial: { errorId: 108, rule: 'header-missing' },
    grpc: 16,
    code: 'HEADER_INVALID',
    http: 401,
    body: '{"error":{"id":108,"message":"Site ID or API key is invalid or missing in the header"}}',
  },
  {
    name: '101 (site invalid) is UNAUTHENTICATED with HTTP 401',
    denial: { errorId: 101, siteId: '4242', maskedKey: '*****fedcb' },
    grpc: 16,
    code: 'SITE_INVALID',
    http: 401,
    body: '{"error":{"id":101,"message":"Site ID 4242 is invalid"}}',
  },
  {
    name: '103 (IP not whitelisted) is PERMISSION_DENIED with HTTP 403',
    denial: { errorId: 103, siteId: '1001', clientIp: '198.51.100.9', maskedKey: '*****fedcb' },
    grpc: 7,
    code: 'IP_NOT_WHITELISTED',
    http: 403,
    body: '{"error":{"id":103,"message":"IP address 198.51.100.9 is not whitelisted for site ID 1001"}}',
  },
  {
    name: '102 (API key invalid) is UNAUTHENTICATED with HTTP 401, the key masked',
    denial: { errorId: 102, siteId: '1001', maskedKey: '*****fedcb' },
    grpc: 16,
    code: 'API_KEY_INVALID',
    http: 401,
    body: '{"error":{"id":102,"message":"API key *****fedcb is invalid"}}',
  },
  {
    name: '104 (body credentials) is UNAUTHENTICATED with HTTP 401, naming the rule',
    denial: { errorId: 104, siteId: '1001', keyId: '7', maskedKey: '*****fedcb', rule: 'siteid-mismatch' },
    grpc: 16,
    code: 'BODY_CREDENTIALS_INVALID',
    http: 401,
    body: '{"error":{"id":104,"message":"Request body siteid does not match the site ID in the Authorization header"}}',
  },
];

describe('toCheckResponse', () => {
  it('allows with status 0, x-site-id overwriting any client value, and site and key ids as metadata', () => {
    const decision: Decision = { outcome: 'allow', method: 'api_key', siteId: '1001', keyId: '42' };
    assert.deepEqual(toCheckResponse(decision), {
      status: { code: 0, message: '' },
      ok_response: {
        headers: [{ header: { key: 'x-site-id', value: '1001' }, append_action: HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD }],
        headers_to_remove: [],
        response_headers_to_add: [],
      },
      dynamic_metadata: { fields: { site_id: { stringValue: '1001' }, auth_method: { stringValue: 'api_key' }, key_id: { stringValue: '42' } } },
    });
  });

  it('sends x-site-id with append unset and append_action OVERWRITE_IF_EXISTS_OR_ADD, as Envoy decodes the bytes', () => {
    const options = sentAsEnvoyReadsIt(toCheckResponse({ outcome: 'allow', method: 'api_key', siteId: '1001', keyId: '42' })).ok_response?.headers ?? [];
    assert.deepEqual(
      options.map((option) => [option.header.key, option.header.value, option.append, option.append_action]),
      // append (a deprecated BoolValue) decodes as null only when it is absent from the wire: a false
      // one would decode as { value: false }, and Envoy would then ignore append_action.
      [['x-site-id', '1001', null, 'OVERWRITE_IF_EXISTS_OR_ADD']],
    );
  });

  for (const c of denials) {
    it(`denies ${c.name}`, () => {
      assert.deepEqual(toCheckResponse({ outcome: 'deny', denial: c.denial }), {
        status: { code: c.grpc, message: c.code },
        denied_response: { status: { code: c.http }, headers: [JSON_CONTENT_TYPE], body: c.body },
      });
    });
  }
});

describe('sunset notice on allowed responses', () => {
  const notice = sunsetNotice({
    deprecatedAt: Date.parse('2026-11-01T00:00:00Z'),
    sunsetAt: Date.parse('2026-12-31T23:59:59Z'),
    guideUrl: 'https://developers.example.com/tokens',
    stripAuthorization: true,
  });

  it('adds Deprecation (RFC 9745), Sunset (RFC 8594) and the two Link relations to the partner response', () => {
    const response = toCheckResponse({ outcome: 'allow', method: 'api_key', siteId: '1001', keyId: '42' }, notice);
    assert.ok('ok_response' in response);
    const headers = response.ok_response.response_headers_to_add.map((option) => [option.header.key, option.header.value, option.append_action]);
    assert.deepEqual(headers, [
      ['deprecation', '@1793491200', HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD],
      ['sunset', 'Thu, 31 Dec 2026 23:59:59 GMT', HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD],
      ['link', '<https://developers.example.com/tokens>; rel="deprecation"', HeaderAppendAction.APPEND_IF_EXISTS_OR_ADD],
      ['link', '<https://developers.example.com/tokens>; rel="sunset"', HeaderAppendAction.APPEND_IF_EXISTS_OR_ADD],
    ]);
    assert.deepEqual(response.ok_response.headers_to_remove, ['authorization']);
    assert.deepEqual(response.ok_response.headers.map((option) => option.header.key), ['x-site-id'], 'the upstream still learns the site');
  });

  it('sends no Link without a guide, and keeps the Authorization header unless asked', () => {
    const plain = sunsetNotice({ deprecatedAt: 0, sunsetAt: 0, guideUrl: undefined, stripAuthorization: false });
    assert.deepEqual(plain.responseHeaders.map((option) => option.header.key), ['deprecation', 'sunset']);
    assert.deepEqual(plain.removeHeaders, []);
  });

  it('leaves denials without the notice', () => {
    const response = toCheckResponse({ outcome: 'deny', denial: { errorId: 102, siteId: '1001', maskedKey: '*****a6b' } }, notice);
    assert.ok('denied_response' in response);
    assert.deepEqual(response.denied_response.headers.map((option) => option.header.key), ['content-type']);
  });
});

describe('the catalogue\'s own gRPC code names', () => {
  it('are the numbers of google.rpc.Code as grpc-js knows them', async () => {
    const { status } = await import('@grpc/grpc-js');
    const { GrpcCode } = await import('../../src/decision/error-catalogue.js');
    assert.deepEqual(GrpcCode, { OK: status.OK, PERMISSION_DENIED: status.PERMISSION_DENIED, UNAUTHENTICATED: status.UNAUTHENTICATED });
  });
});

describe('a 105 tells the partner when to come back and where to go', () => {
  const brownout = (until: number, guideUrl: string | undefined): Denial => ({
    errorId: 105,
    siteId: '1001',
    keyId: '42',
    maskedKey: '*****a6b',
    reason: 'brownout',
    brownout: { id: '3', until },
    sunsetAt: Date.parse('2026-12-31T23:59:59Z'),
    guideUrl,
  });
  const headersOf = (denial: Denial) => {
    const response = toCheckResponse({ outcome: 'deny', denial });
    assert.ok('denied_response' in response);
    return response.denied_response.headers.map((option) => [option.header.key, option.header.value]);
  };

  it("during a brownout: Retry-After at its end as an HTTP-date (RFC 9110 §10.2.3), and the guide's two Link relations", () => {
    assert.deepEqual(headersOf(brownout(Date.parse('2026-12-01T14:00:00Z'), 'https://developers.example.com/tokens')), [
      ['content-type', 'application/json'],
      ['retry-after', 'Tue, 01 Dec 2026 14:00:00 GMT'],
      ['link', '<https://developers.example.com/tokens>; rel="deprecation"'],
      ['link', '<https://developers.example.com/tokens>; rel="sunset"'],
    ]);
  });

  it('no Retry-After for a brownout that ends at infinity, no Link without a guide', () => {
    assert.deepEqual(headersOf(brownout(Number.POSITIVE_INFINITY, undefined)), [['content-type', 'application/json']]);
  });

  it('the guide on every 105, with no Retry-After once keys are retired or the site moved to tokens', () => {
    for (const reason of ['retired', 'tokens-only'] as const) {
      const { brownout: _none, ...rest } = brownout(0, 'https://developers.example.com/tokens') as Extract<Denial, { errorId: 105 }>;
      assert.deepEqual(
        headersOf({ ...rest, reason }).map(([key]) => key),
        ['content-type', 'link', 'link'],
        reason,
      );
    }
  });
});
