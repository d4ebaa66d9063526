import type { ServerUnaryCall, ServiceError } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { decide } from '../../src/decision/decide.js';
import { createAuthorizationService, type AuthorizationServiceDeps } from '../../src/envoy/authorization-service.js';
import type { CheckRequestMessage } from '../../src/envoy/messages.js';
import type { CheckResponseToSend } from '../../src/envoy/proto.js';
import { createLogger } from '../../src/observe/logger.js';
import { checkRequest } from '../support/envoy-client.js';
import { NO_SUNSET, snapshotOf } from '../support/snapshot.js';

const NOW = Date.parse('2026-06-01T00:00:00Z');
const KEY = randomUUID();
const snapshot = snapshotOf([{ siteId: '1001', keys: [{ key: KEY, keyId: '11' }], cidrs: ['203.0.113.0/24'] }]);

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const call = (requestId: string, key = KEY) =>
  ({
    request: checkRequest({ authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }), headers: { 'x-request-id': requestId } }),
  }) as unknown as ServerUnaryCall<CheckRequestMessage, CheckResponseToSend>;

function service(trail: string[], overrides: Partial<AuthorizationServiceDeps> = {}) {
  return createAuthorizationService({
    clientIpSource: { kind: 'peer' },
    maxBodyBytes: loadConfig({}).maxBodyBytes,
    authorize: (input) => decide(input, snapshot, NOW, NO_SUNSET),
    onDecision: (event) => trail.push(`observed ${event.requestId} ${event.outcome}`),
    logger: createLogger('silent'),
    ...overrides,
  });
}

describe('Check: each check answered within its call, then observed', () => {
  it('answers and observes each check in the order received', () => {
    const trail: string[] = [];
    const { Check } = service(trail);
    const answered = (requestId: string) => (error: Partial<ServiceError> | null) => trail.push(`answered ${requestId}${error ? ` ${error.code}` : ''}`);
    Check(call('r1'), answered('r1'));
    Check(call('r2', randomUUID()), answered('r2'));
    assert.deepEqual(trail, ['answered r1', 'observed r1 allowed', 'answered r2', 'observed r2 denied']);
  });

  it('answers INTERNAL when sending the answer throws, observes nothing of it, and goes on answering', () => {
    const trail: string[] = [];
    const { Check } = service(trail);
    let calls = 0;
    Check(call('r1'), (error) => {
      calls++;
      if (error === null) throw new Error('the transport broke');
      trail.push(`r1 answered ${error.code}`);
    });
    Check(call('r2'), (error) => trail.push(`r2 answered ${error === null ? 'OK' : error.code}`));
    assert.equal(calls, 2);
    assert.deepEqual(trail, ['r1 answered 13', 'r2 answered OK', 'observed r2 allowed']);
  });
});

describe('Check: a check that waited for its decision', () => {
  it('answers INTERNAL when sending its answer throws, instead of leaving a rejected promise behind', async () => {
    const trail: string[] = [];
    const { Check } = service(trail, { authorize: async (input) => decide(input, snapshot, NOW, NO_SUNSET) });
    const internal = new Promise<number | undefined>((resolve) =>
      Check(call('r1'), (error) => {
        if (error === null) throw new Error('the transport broke');
        resolve(error.code);
      }),
    );
    assert.equal(await internal, 13);
    await nextTurn();
    assert.deepEqual(trail, []);
  });
});

describe('a check left undecided for a reason of its own', () => {
  it("answers UNAVAILABLE (Envoy's retryable 503), never a denial, and tells observers the reason", async () => {
    const trail: string[] = [];
    const { Check } = service(trail, {
      authorize: async () => ({ undecided: 'unknown-kid-pending' }),
      onFailure: (event) => trail.push(`undecided ${event.requestId} ${event.reason}`),
    });
    const answered = new Promise<Partial<ServiceError> | null>((resolve) => Check(call('r1'), (error) => resolve(error)));
    const error = await answered;
    assert.equal(error?.code, 14, 'UNAVAILABLE');
    assert.match(String(error?.details), /signing key \(kid\) not looked up at the issuer yet; retry/);
    await nextTurn();
    assert.deepEqual(trail, ['undecided r1 unknown-kid-pending']);
  });
});
