import * as grpc from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { decide } from '../../src/decision/decide.js';
import { sunsetNotice, toCheckResponse } from '../../src/envoy/check-response.js';
import { startGrpcServer, type AuthzGrpcServer } from '../../src/envoy/grpc-server.js';
import type { CheckRequestMessage } from '../../src/envoy/messages.js';
import { AUTHORIZATION_SERVICE } from '../../src/envoy/proto.js';
import { viewCheckRequest } from '../../src/envoy/request-view.js';
import { createLogger } from '../../src/observe/logger.js';
import { checkRequest, checkResponseBytes, upstreamCheckMethod, type CheckArguments } from '../support/envoy-client.js';
import { NO_SUNSET, snapshotOf } from '../support/snapshot.js';

const DEFAULTS = loadConfig({});
const KEY = '6f1c1e0a-8a4b-4c52-9d3e-0b7a2c9d4e5f';
const OTHER_KEY = '7f1c1e0a-8a4b-4c52-9d3e-0b7a2c9d4e5f';
const NOW = Date.parse('2026-06-01T00:00:00Z');
const SNAPSHOT = snapshotOf([
  { siteId: '1001', keys: [{ key: KEY, keyId: '11' }, { key: OTHER_KEY, keyId: '12' }], cidrs: ['203.0.113.0/24'] },
  { siteId: '1002', enabled: false, keys: [{ key: KEY, keyId: '21' }], cidrs: ['203.0.113.0/24'] },
]);
const POLICY = sunsetNotice({
  deprecatedAt: Date.parse('2026-11-01T00:00:00Z'),
  sunsetAt: Date.parse('2026-12-31T23:59:59Z'),
  guideUrl: 'https://developers.example.com/tokens',
  stripAuthorization: true,
});
const VIEW_OPTIONS = { clientIpSource: { kind: 'peer' }, maxBodyBytes: DEFAULTS.maxBodyBytes } as const;

const upstreamCheck = upstreamCheckMethod;

const body = (siteId: number, key: string) => JSON.stringify({ siteid: siteId, apikey: key });
const requests: ReadonlyArray<[string, CheckArguments]> = [
  ['allowed', { authorization: `1001:${KEY}`, body: body(1001, KEY) }],
  ['allowed, the other key of the site', { authorization: `1001:${OTHER_KEY}`, body: body(1001, OTHER_KEY) }],
  ['allowed, the key in upper case', { authorization: `1001:${KEY.toUpperCase()}`, body: body(1001, KEY) }],
  ['108', { body: body(1001, KEY) }],
  ['101 unknown site', { authorization: `4242:${KEY}`, body: body(4242, KEY) }],
  ['101 disabled site', { authorization: `1002:${KEY}`, body: body(1002, KEY) }],
  ['103', { authorization: `1001:${KEY}`, body: body(1001, KEY), ip: '198.51.100.9' }],
  ['102', { authorization: `1001:00000000-0000-4000-8000-000000000000`, body: body(1001, KEY) }],
  ['104', { authorization: `1001:${KEY}`, body: body(1001, OTHER_KEY) }],
];

describe('the bytes a running server sends are Envoy upstream encoding of toCheckResponse', () => {
  let server: AuthzGrpcServer;
  let client: grpc.Client;

  before(async () => {
    server = await startGrpcServer({
      bindAddress: '127.0.0.1',
      port: 0,
      maxBodyBytes: DEFAULTS.maxBodyBytes,
      maxConnections: DEFAULTS.grpcMaxConnections,
      logger: createLogger('silent'),
      authorization: {
        ...VIEW_OPTIONS,
        allowedResponse: POLICY,
        authorize: (input) => decide(input, SNAPSHOT, NOW, NO_SUNSET),
        logger: createLogger('silent'),
      },
    });
    client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  });

  after(async () => {
    client?.close();
    await server?.shutdown(1_000);
  });

  const bytesReceived = (request: object) => checkResponseBytes(client, upstreamCheck.requestSerialize(request));

  for (const [name, args] of requests) {
    it(`${name}: byte for byte, on the first check and on later ones`, async () => {
      const request = checkRequest(args) as object;
      // The decision is not what is tested here: the same one, encoded by Envoy's own protos.
      const ours: CheckRequestMessage = AUTHORIZATION_SERVICE.Check.requestDeserialize(upstreamCheck.requestSerialize(request));
      const decision = decide(viewCheckRequest(ours, VIEW_OPTIONS).input, SNAPSHOT, NOW, NO_SUNSET);
      const expected = upstreamCheck.responseSerialize(toCheckResponse(decision, POLICY));
      for (let round = 1; round <= 3; round++) assert.deepEqual(await bytesReceived(request), expected, `check ${round}`);
    });
  }
});
