import * as grpc from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { decide } from '../../src/decision/decide.js';
import type { CheckInput, CredentialSnapshot, Decision } from '../../src/decision/types.js';
import { startGrpcServer, type AuthzGrpcServer } from '../../src/envoy/grpc-server.js';
import type { CheckEvent } from '../../src/observe/check-event.js';
import { createLogger } from '../../src/observe/logger.js';
import { authorizationClient, check, checkRequest, verdict, type UpstreamCheckResponse } from '../support/envoy-client.js';
import { healthClient, healthOf, type HealthClient } from '../support/health-client.js';
import { NO_SUNSET, snapshotOf } from '../support/snapshot.js';

/** The production defaults of MAX_BODY_BYTES and GRPC_MAX_CONNECTIONS. */
const DEFAULTS = loadConfig({});
const KEY = '6f1c1e0a-8a4b-4c52-9d3e-0b7a2c9d4e5f';
const NOW = Date.parse('2026-06-01T00:00:00Z');
const SNAPSHOT = snapshotOf([{ siteId: '1001', keys: [{ key: KEY, keyId: '11' }], cidrs: ['203.0.113.0/24', '2001:db8::/32'] }]);
const BODY = JSON.stringify({ siteid: 1001, apikey: KEY });

type CheckClient = ReturnType<typeof authorizationClient>;
/** A Check with any request object, for malformed ones the helper would not build. */
function rawCheck(client: CheckClient, request: unknown): Promise<UpstreamCheckResponse> {
  return new Promise((resolveCheck, reject) =>
    client.Check(request, { deadline: Date.now() + 5_000 }, (error, response) => (error ? reject(error) : resolveCheck(response))),
  );
}

async function rejectsWith(promise: Promise<unknown>, code: grpc.status): Promise<void> {
  await assert.rejects(promise, (error: grpc.ServiceError) => {
    assert.equal(error.code, code, `gRPC ${grpc.status[error.code]} instead of ${grpc.status[code]}`);
    return true;
  });
}

describe('ext_authz gRPC server on a real socket, called with Envoy upstream protos', () => {
  /** What `authorize` does for the next call: decide on the snapshot, have no data, or crash. */
  let mode: 'decide' | 'no-data' | 'crash' = 'decide';
  let observerThrows = false;
  const events: CheckEvent[] = [];
  let server: AuthzGrpcServer;
  let client: CheckClient;
  let health: HealthClient;

  const authorize = (input: CheckInput): Decision | undefined => {
    if (mode === 'no-data') return undefined;
    if (mode === 'crash') throw new Error('simulated bug');
    const snapshot: CredentialSnapshot = SNAPSHOT;
    return decide(input, snapshot, NOW, NO_SUNSET);
  };

  before(async () => {
    server = await startGrpcServer({
      bindAddress: '127.0.0.1',
      port: 0,
      maxBodyBytes: DEFAULTS.maxBodyBytes,
      maxConnections: DEFAULTS.grpcMaxConnections,
      logger: createLogger('silent'),
      authorization: {
        clientIpSource: { kind: 'peer' },
        maxBodyBytes: loadConfig({}).maxBodyBytes,
        authorize,
        onDecision: (event) => {
          events.push(event);
          if (observerThrows) throw new Error('observer bug');
        },
        logger: createLogger('silent'),
      },
    });
    client = authorizationClient(`127.0.0.1:${server.port}`);
    health = healthClient(`127.0.0.1:${server.port}`);
  });

  after(async () => {
    client?.close();
    health?.close();
    await server?.shutdown(1_000);
  });

  it('answers Check and Health on the port it reports when asked for port 0', async () => {
    // Clients of their own, made from nothing but the reported port.
    const onPort = authorizationClient(`127.0.0.1:${server.port}`);
    const healthOnPort = healthClient(`127.0.0.1:${server.port}`);
    try {
      mode = 'decide';
      const response = await check(onPort, { authorization: `1001:${KEY}`, body: BODY, ip: '203.0.113.7' });
      assert.equal(verdict(response), 'allow');
      assert.equal(response.ok_response?.headers[0]?.header.value, '1001');
      assert.equal(await healthOf(healthOnPort, ''), 'NOT_SERVING', 'health answers, and starts NOT_SERVING');
    } finally {
      onPort.close();
      healthOnPort.close();
    }
  });

  it('reports NOT_SERVING for the server and the Authorization service until setServing(true)', async () => {
    assert.equal(await healthOf(health, ''), 'NOT_SERVING');
    assert.equal(await healthOf(health, 'envoy.service.auth.v3.Authorization'), 'NOT_SERVING');
    server.setServing(true);
    assert.equal(await healthOf(health, ''), 'SERVING');
    assert.equal(await healthOf(health, 'envoy.service.auth.v3.Authorization'), 'SERVING');
    server.setServing(false);
    assert.equal(await healthOf(health, ''), 'NOT_SERVING');
    server.setServing(true);
  });

  it('allows a valid request, with x-site-id and dynamic metadata', async () => {
    mode = 'decide';
    const response = await check(client, { authorization: `1001:${KEY}`, body: BODY, ip: '203.0.113.7' });
    assert.equal(verdict(response), 'allow');
    assert.equal(response.status.code, grpc.status.OK);
    const siteHeader = response.ok_response?.headers[0];
    assert.deepEqual([siteHeader?.header.key, siteHeader?.header.value, siteHeader?.append_action], ['x-site-id', '1001', 'OVERWRITE_IF_EXISTS_OR_ADD']);
    assert.equal(response.dynamic_metadata?.fields.key_id?.stringValue, '11');
  });

  it('denies an address outside the allowlist with 103, PERMISSION_DENIED and HTTP 403', async () => {
    mode = 'decide';
    const response = await check(client, { authorization: `1001:${KEY}`, body: BODY, ip: '198.51.100.9' });
    assert.equal(verdict(response), 103);
    assert.equal(response.status.code, grpc.status.PERMISSION_DENIED);
    assert.equal(response.denied_response?.status.code, 'Forbidden');
  });

  it('denies an empty CheckRequest with 108 instead of failing', async () => {
    mode = 'decide';
    const response = await rawCheck(client, {});
    assert.equal(verdict(response), 108);
    assert.equal(response.status.code, grpc.status.UNAUTHENTICATED);
    assert.equal(response.denied_response?.status.code, 'Unauthorized');
  });

  it('fails the RPC with UNAVAILABLE when there is no credential data to decide on', async () => {
    mode = 'no-data';
    await rejectsWith(check(client, { authorization: `1001:${KEY}`, body: BODY }), grpc.status.UNAVAILABLE);
    mode = 'decide';
  });

  it('fails the RPC with INTERNAL, never an allow, when deciding throws', async () => {
    mode = 'crash';
    await rejectsWith(check(client, { authorization: `1001:${KEY}`, body: BODY }), grpc.status.INTERNAL);
    mode = 'decide';
  });

  it('tells observers about each decision with the x-request-id, and survives an observer that throws', async () => {
    mode = 'decide';
    observerThrows = true;
    events.length = 0;
    const response = await check(client, { authorization: `1001:${KEY}`, body: BODY, headers: { 'x-request-id': 'req-observed' } });
    observerThrows = false;
    assert.equal(verdict(response), 'allow');
    assert.equal(events.length, 1);
    assert.equal(events[0]?.requestId, 'req-observed');
    assert.equal(events[0]?.outcome, 'allowed');
    assert.ok((events[0]?.durationSeconds ?? -1) >= 0);
  });

  it('accepts a CheckRequest carrying a 1 MiB body', async () => {
    mode = 'decide';
    const credentials = JSON.stringify({ siteid: 1001, apikey: KEY, padding: '' });
    // As large as MAX_BODY_BYTES (by default 1 MiB) lets through.
    const body = JSON.stringify({ siteid: 1001, apikey: KEY, padding: 'x'.repeat(1024 * 1024 - credentials.length) });
    const response = await rawCheck(client, checkRequest({ authorization: `1001:${KEY}`, body, ip: '2001:db8::1' }));
    assert.equal(verdict(response), 'allow');
  });
});

describe('ext_authz gRPC server shutdown', () => {
  it('goes NOT_SERVING, stops accepting checks, and resolves', async () => {
    const server = await startGrpcServer({
      bindAddress: '127.0.0.1',
      port: 0,
      maxBodyBytes: DEFAULTS.maxBodyBytes,
      maxConnections: DEFAULTS.grpcMaxConnections,
      logger: createLogger('silent'),
      authorization: { clientIpSource: { kind: 'peer' }, maxBodyBytes: loadConfig({}).maxBodyBytes, authorize: (input) => decide(input, SNAPSHOT, NOW, NO_SUNSET), logger: createLogger('silent') },
    });
    server.setServing(true);
    const client = authorizationClient(`127.0.0.1:${server.port}`);
    try {
      assert.equal(verdict(await check(client, { authorization: `1001:${KEY}`, body: BODY })), 'allow');
      await server.shutdown(2_000);
      await rejectsWith(check(client, { authorization: `1001:${KEY}`, body: BODY }), grpc.status.UNAVAILABLE);
    } finally {
      client.close();
    }
  });
});
