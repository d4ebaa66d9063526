import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { describe, it } from 'node:test';
import protobuf from 'protobufjs';
import { checkRequestFromJson } from '../../src/envoy/check-request-json.js';
import { viewCheckRequest } from '../../src/envoy/request-view.js';
import { UPSTREAM_INCLUDE_DIRS } from '../support/envoy-client.js';

/** CheckRequest from Envoy's full upstream protos, with camelCase names as protobufjs writes proto3 JSON. */
const UPSTREAM_CHECK_REQUEST = (() => {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) =>
    isAbsolute(target) ? target : (UPSTREAM_INCLUDE_DIRS.map((dir) => join(dir, target)).find((path) => existsSync(path)) ?? target);
  root.loadSync('envoy/service/auth/v3/external_auth.proto');
  root.resolveAll();
  return root.lookupType('envoy.service.auth.v3.CheckRequest');
})();

const KEY = '0f0e0d0c-0b0a-4908-8706-050403020100';
const BODY = `{"siteid":1001,"apikey":"${KEY}"}`;
const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/** The same request in Envoy's JSON, once with JSON (camelCase) names and once with proto names. */
const CAMEL = {
  attributes: {
    source: { address: { socketAddress: { address: '203.0.113.7', portValue: 4242 } } },
    request: {
      http: {
        method: 'POST',
        headers: { authorization: `1001:${KEY}`, 'x-request-id': 'r-1' },
        headerMap: { headers: [{ key: 'x-extra', rawValue: base64('raw') }] },
        rawBody: base64(BODY),
        size: '44',
      },
    },
    contextExtensions: { body_credentials: 'optional' },
  },
};
const SNAKE = {
  attributes: {
    source: { address: { socket_address: { address: '203.0.113.7', port_value: 4242 } } },
    request: {
      http: {
        method: 'POST',
        headers: { authorization: `1001:${KEY}`, 'x-request-id': 'r-1' },
        header_map: { headers: [{ key: 'x-extra', raw_value: base64('raw') }] },
        raw_body: base64(BODY),
        size: 44,
      },
    },
    context_extensions: { body_credentials: 'optional' },
  },
};

function decoded(json: unknown) {
  const result = checkRequestFromJson(json);
  assert.ok(result.ok, result.ok ? '' : result.reason);
  return result;
}

describe("a CheckRequest in Envoy's JSON form (proto3 JSON mapping)", () => {
  it('decodes camelCase and snake_case names to the same message, as the server decodes it', () => {
    const camel = decoded(CAMEL);
    const snake = decoded(SNAKE);
    assert.deepEqual(camel.request, snake.request);
    assert.deepEqual(camel.ignoredFields, []);
    const { input, requestId } = viewCheckRequest(camel.request, { clientIpSource: { kind: 'peer' }, maxBodyBytes: 1_048_576 });
    assert.equal(input.authorization, `1001:${KEY}`);
    assert.equal(input.clientAddress, '203.0.113.7');
    assert.deepEqual(input.body, { kind: 'text', text: BODY });
    assert.equal(input.bodyCredentials, 'optional');
    assert.equal(requestId, 'r-1');
  });

  it("reads what Envoy's own protos write as JSON, ignoring the fields the service does not read", () => {
    const message = UPSTREAM_CHECK_REQUEST.fromObject({
      attributes: {
        ...CAMEL.attributes,
        destination: { address: { socketAddress: { address: '10.0.0.1', portValue: 8080 } }, principal: 'spiffe://partner-api' },
        request: { ...CAMEL.attributes.request, time: { seconds: 1_800_000_000 }, http: { ...CAMEL.attributes.request.http, scheme: 'https', protocol: 'HTTP/1.1' } },
        metadataContext: { filterMetadata: { lua: { fields: { a: { stringValue: 'b' } } } } },
      },
    });
    // protobufjs's JSON form: lowerCamelCase names, bytes as base64, int64 as strings.
    const json = UPSTREAM_CHECK_REQUEST.toObject(message, { longs: String, bytes: String, json: true });
    const result = decoded(json);
    assert.deepEqual(result.request, decoded(CAMEL).request);
    assert.deepEqual([...result.ignoredFields].sort(), [
      'attributes.destination',
      'attributes.metadataContext',
      'attributes.request.http.protocol',
      'attributes.request.http.scheme',
      'attributes.request.time',
    ]);
  });

  it('refuses what is no CheckRequest, saying why', () => {
    const refusals: ReadonlyArray<readonly [unknown, RegExp]> = [
      [[1], /expected a JSON object/],
      ['text', /expected a JSON object/],
      [{ attributes: { request: 5 } }, /AttributeContext\.request: object expected/],
      [{ attributes: { request: { http: { rawBody: '!!!' } } } }, /base64/],
      [{ attributes: { context_extensions: {}, contextExtensions: {} } }, /attributes\.context_extensions is given twice/],
    ];
    for (const [json, reason] of refusals) {
      const result = checkRequestFromJson(json);
      assert.equal(result.ok, false, JSON.stringify(json));
      assert.match(result.ok ? '' : result.reason, reason);
    }
  });
});
