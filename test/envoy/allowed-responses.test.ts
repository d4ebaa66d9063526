import type { MethodDefinition, ServerUnaryCall } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { decide } from '../../src/decision/decide.js';
import type { CheckInput, CredentialSnapshot, Decision, Denial } from '../../src/decision/types.js';
import { AllowedResponses } from '../../src/envoy/allowed-responses.js';
import { createAuthorizationService, DENIED_RESPONSES_MAX } from '../../src/envoy/authorization-service.js';
import { EncodedResponses } from '../../src/envoy/encoded-responses.js';
import { PLAIN_ALLOWED_RESPONSE, sunsetNotice, toCheckResponse, type AllowedResponsePolicy } from '../../src/envoy/check-response.js';
import type { CheckRequestMessage, CheckResponseMessage } from '../../src/envoy/messages.js';
import { AUTHORIZATION_SERVICE, AUTHORIZATION_SERVICE_NAME, encodeCheckResponse, type CheckResponseToSend } from '../../src/envoy/proto.js';
import { createLogger } from '../../src/observe/logger.js';
import { checkRequest, upstreamDefinition, type CheckArguments } from '../support/envoy-client.js';
import { NO_SUNSET, snapshotOf } from '../support/snapshot.js';

/** Envoy's own encoder: what the bytes of each response must be. */
const upstreamCheck = (upstreamDefinition[AUTHORIZATION_SERVICE_NAME] as Record<string, MethodDefinition<object, object>>)['Check']!;
const plainEncoding = (response: CheckResponseMessage): Buffer => upstreamCheck.responseSerialize(response);

const SUNSET_AT = Date.parse('2026-12-31T23:59:59Z');
const policies: ReadonlyArray<[string, AllowedResponsePolicy]> = [
  ['no sunset headers', PLAIN_ALLOWED_RESPONSE],
  [
    'sunset headers with a guide and STRIP_AUTHORIZATION',
    sunsetNotice({ deprecatedAt: Date.parse('2026-11-01T00:00:00Z'), sunsetAt: SUNSET_AT, guideUrl: 'https://developers.example.com/tokens', stripAuthorization: true }),
  ],
  ['sunset headers without a guide', sunsetNotice({ deprecatedAt: SUNSET_AT, sunsetAt: SUNSET_AT, guideUrl: undefined, stripAuthorization: false })],
  ['STRIP_AUTHORIZATION only', { responseHeaders: [], removeHeaders: ['authorization'] }],
];

const allows: readonly Decision[] = [
  { outcome: 'allow', method: 'api_key', siteId: '1001', keyId: '42' },
  { outcome: 'allow', method: 'api_key', siteId: '1001', keyId: '43' },
  { outcome: 'allow', method: 'api_key', siteId: '9223372036854775807', keyId: '9223372036854775807' },
  { outcome: 'allow', method: 'api_key', siteId: '1001', keyId: '42', rehearsal: { brownoutId: '7' } },
];

const MASKED = '*****fedcb';
const denials: readonly Denial[] = [
  { errorId: 108, rule: 'header-missing' },
  { errorId: 108, rule: 'header-malformed' },
  { errorId: 108, rule: 'site-id-invalid' },
  { errorId: 108, rule: 'api-key-invalid' },
  { errorId: 101, siteId: '4242', maskedKey: MASKED },
  { errorId: 103, siteId: '1001', clientIp: '198.51.100.9', maskedKey: MASKED },
  { errorId: 103, siteId: '1001', clientIp: '2001:db8::9', maskedKey: MASKED },
  { errorId: 103, siteId: '1001', clientIp: 'unknown', maskedKey: MASKED },
  { errorId: 102, siteId: '1001', maskedKey: MASKED },
  { errorId: 104, siteId: '1001', keyId: '7', maskedKey: MASKED, rule: 'body-missing' },
  { errorId: 104, siteId: '1001', keyId: '7', maskedKey: MASKED, rule: 'body-not-forwarded' },
  { errorId: 104, siteId: '1001', keyId: '7', maskedKey: MASKED, rule: 'body-partial' },
  { errorId: 104, siteId: '1001', keyId: '7', maskedKey: MASKED, rule: 'body-too-large', maxBodyBytes: 1_048_576 },
  { errorId: 104, siteId: '1001', keyId: '7', maskedKey: MASKED, rule: 'body-not-utf8' },
  { errorId: 104, siteId: '1001', keyId: '7', maskedKey: MASKED, rule: 'body-not-json' },
  { errorId: 104, siteId: '1001', keyId: '7', maskedKey: MASKED, rule: 'body-not-object' },
  { errorId: 104, siteId: '1001', keyId: '7', maskedKey: MASKED, rule: 'siteid-missing' },
  { errorId: 104, siteId: '1001', keyId: '7', maskedKey: MASKED, rule: 'siteid-duplicate' },
  { errorId: 104, siteId: '1001', keyId: '7', maskedKey: MASKED, rule: 'siteid-mismatch' },
  { errorId: 104, siteId: '1001', keyId: '7', maskedKey: MASKED, rule: 'apikey-missing' },
  { errorId: 104, siteId: '1001', keyId: '7', maskedKey: MASKED, rule: 'apikey-duplicate' },
  { errorId: 104, siteId: '1001', keyId: '7', maskedKey: MASKED, rule: 'apikey-mismatch' },
  {
    errorId: 105, siteId: '1001', keyId: '7', maskedKey: MASKED, reason: 'brownout',
    brownout: { id: '3', until: Date.parse('2026-11-15T12:00:00Z') }, sunsetAt: SUNSET_AT, guideUrl: 'https://developers.example.com/tokens',
  },
  { errorId: 105, siteId: '1001', keyId: '7', maskedKey: MASKED, reason: 'retired', sunsetAt: SUNSET_AT, guideUrl: undefined },
];

type CheckImplementation = ReturnType<typeof createAuthorizationService>;

function serviceOf(authorize: (input: CheckInput) => Decision | undefined, allowedResponse: AllowedResponsePolicy): CheckImplementation {
  return createAuthorizationService({
    clientIpSource: { kind: 'peer' },
    maxBodyBytes: loadConfig({}).maxBodyBytes,
    authorize,
    allowedResponse,
    logger: createLogger('silent'),
  });
}

/** The bytes the gRPC server writes for one Check: the handler's answer through the service definition's serializer. */
function bytesSent(service: CheckImplementation, request: CheckArguments = {}): Buffer {
  let sent: CheckResponseToSend | null | undefined;
  const call = { request: checkRequest(request) } as unknown as ServerUnaryCall<CheckRequestMessage, CheckResponseToSend>;
  service.Check(call, (error, response) => {
    assert.equal(error, null);
    sent = response;
  });
  assert.ok(sent);
  return AUTHORIZATION_SERVICE.Check.responseSerialize(sent);
}

/** An allow by API key, as decide() makes it. */
const byKey = (siteId: string, keyId: string) => ({ outcome: 'allow', method: 'api_key', siteId, keyId }) as const;

describe('the bytes sent are the plain encoding of toCheckResponse, byte for byte', () => {
  for (const [policyName, policy] of policies) {
    for (const decision of [...allows, ...denials.map((denial): Decision => ({ outcome: 'deny', denial }))]) {
      const name = decision.outcome === 'allow' ? `allow ${JSON.stringify(decision)}` : `deny ${JSON.stringify(decision.denial)}`;
      it(`${policyName}: ${name}`, () => {
        const expected = plainEncoding(toCheckResponse(decision, policy));
        assert.deepEqual(encodeCheckResponse(toCheckResponse(decision, policy)), expected, 'our proto/ encodes as Envoy upstream does');
        const service = serviceOf(() => decision, policy);
        // The first check encodes, the next ones take what was kept.
        for (const round of ['first', 'second', 'third']) assert.deepEqual(bytesSent(service), expected, `${round} check`);
      });
    }
  }

  it('a site and key answered after other sites and keys still get their own response', () => {
    let decision: Decision = allows[0]!;
    const service = serviceOf(() => decision, policies[1]![1]);
    for (const next of [...allows, ...allows].reverse()) {
      decision = next;
      assert.deepEqual(bytesSent(service), plainEncoding(toCheckResponse(next, policies[1]![1])), JSON.stringify(next));
    }
  });
});

describe('kept denied responses', () => {
  const tokenDenials: readonly Denial[] = [
    { errorId: 106, rule: 'expired' },
    { errorId: 106, rule: 'signature', siteId: '1001' },
    { errorId: 106, rule: 'revoked', siteId: '1001', clientId: 'partner-a' },
    { errorId: 107, clientId: 'partner-a' },
    { errorId: 107, clientId: 'partner-b' },
  ];
  const others: readonly Denial[] = [
    { errorId: 101, siteId: '4243', maskedKey: MASKED },
    { errorId: 102, siteId: '1001', maskedKey: '*****abcde' },
    { errorId: 102, siteId: '1002', maskedKey: MASKED },
  ];

  it('every denial answered after the others still gets its own response, challenge and body', () => {
    const all = [...denials, ...tokenDenials, ...others];
    let denial: Denial = all[0]!;
    const service = serviceOf(() => ({ outcome: 'deny', denial }), PLAIN_ALLOWED_RESPONSE);
    for (const next of [...all, ...all.slice().reverse(), ...all]) {
      denial = next;
      assert.deepEqual(bytesSent(service), plainEncoding(toCheckResponse({ outcome: 'deny', denial: next })), JSON.stringify(next));
    }
  });

  it('answers right while made-up site ids churn more denials than it keeps (DENIED_RESPONSES_MAX)', () => {
    let siteId = 0;
    const service = serviceOf(() => ({ outcome: 'deny', denial: { errorId: 101, siteId: String(++siteId), maskedKey: MASKED } }), PLAIN_ALLOWED_RESPONSE);
    for (let i = 0; i < DENIED_RESPONSES_MAX + 50; i++) bytesSent(service);
    const last = upstreamCheck.responseDeserialize(bytesSent(service)) as { denied_response: { body: string } };
    assert.equal(JSON.parse(last.denied_response.body).error.message, `Site ID ${siteId} is invalid`);
  });
});

describe('EncodedResponses', () => {
  it('encodes once per key while kept, and drops the oldest when full', () => {
    const responses = new EncodedResponses(2);
    let encodings = 0;
    const encode = (text: string) => () => (encodings++, Buffer.from(text));
    const a = responses.response('a', encode('a'));
    assert.equal(responses.response('a', encode('a')), a);
    responses.response('b', encode('b'));
    responses.response('c', encode('c'));
    assert.equal(responses.size, 2);
    assert.equal(encodings, 3);
    assert.notEqual(responses.response('a', encode('a')), a, 'a was dropped to make room for c');
    assert.equal(encodings, 4);
  });
});

describe('AllowedResponses', () => {
  function counted(maxEntries: number) {
    const encoded: string[] = [];
    const responses = new AllowedResponses(
      PLAIN_ALLOWED_RESPONSE,
      (response) => {
        encoded.push(JSON.stringify('dynamic_metadata' in response ? response.dynamic_metadata.fields : response));
        return encodeCheckResponse(response);
      },
      maxEntries,
    );
    return { responses, encodings: () => encoded.length };
  }

  it('encodes each site and key once while it is kept', () => {
    const { responses, encodings } = counted(10);
    const first = responses.response(byKey('1001', '1'));
    assert.equal(responses.response(byKey('1001', '1')), first);
    assert.equal(responses.response(byKey('1001', '1')), first);
    assert.equal(encodings(), 1);
    responses.response(byKey('1001', '2'));
    responses.response(byKey('1002', '1'));
    assert.equal(encodings(), 3);
    assert.equal(responses.size, 3);
  });

  it('keeps at most its bound, making room by dropping the oldest entry', () => {
    const { responses, encodings } = counted(2);
    responses.response(byKey('1001', '1'));
    responses.response(byKey('1001', '2'));
    responses.response(byKey('1001', '3')); // drops 1001:1
    assert.equal(responses.size, 2);
    assert.equal(encodings(), 3);
    responses.response(byKey('1001', '3'));
    responses.response(byKey('1001', '2'));
    assert.equal(encodings(), 3, '1001:2 and 1001:3 are still kept');
    responses.response(byKey('1001', '1')); // encoded again; drops 1001:2
    assert.equal(encodings(), 4);
    assert.equal(responses.size, 2);
    responses.response(byKey('1001', '2'));
    assert.equal(encodings(), 5, '1001:2 was dropped to make room');
    for (let key = 10; key < 1000; key++) responses.response(byKey('1001', String(key)));
    assert.equal(responses.size, 2);
  });

  it('answers the same site and key under a changed policy, a token client of the same id, and a key again, each with its own bytes', () => {
    const { responses } = counted(10);
    const [plain, sunset] = [policies[0]![1], policies[1]![1]];
    const expected = (decision: Decision, policy: AllowedResponsePolicy) => plainEncoding(toCheckResponse(decision, policy));
    const key = byKey('1001', '42');
    const token: Decision = { outcome: 'allow', method: 'token', siteId: '1001', clientId: '42' };
    const answers: Array<[Decision, AllowedResponsePolicy]> = [[key, plain], [key, plain], [key, sunset], [token, sunset], [key, sunset], [byKey('1001', '43'), sunset]];
    for (const [decision, policy] of answers) {
      assert.deepEqual(responses.response(decision as Extract<Decision, { outcome: 'allow' }>, policy).bytes, expected(decision, policy));
    }
  });

  it('holds each encoding in memory of its own, not in a slice of a shared buffer pool it would keep alive', () => {
    const { responses } = counted(10);
    const { bytes } = responses.response(byKey('1001', '1'));
    assert.equal(bytes.buffer.byteLength, bytes.length);
  });
});

describe('kept responses never outlive the credentials: each check is decided on the snapshot of the moment', () => {
  const KEY = '0f0e0d0c-0b0a-4908-8706-050403020100';
  const OTHER_KEY = '1f0e0d0c-0b0a-4908-8706-050403020100';
  const request: CheckArguments = { authorization: `1001:${KEY}`, ip: '203.0.113.7', body: JSON.stringify({ siteid: 1001, apikey: KEY }) };
  const site = { siteId: '1001', keys: [{ key: KEY, keyId: '11' }, { key: OTHER_KEY, keyId: '12' }], cidrs: ['203.0.113.0/24'] };
  const snapshots: ReadonlyArray<[string, CredentialSnapshot, 'allow' | number]> = [
    ['allowed', snapshotOf([site]), 'allow'],
    ['key revoked', snapshotOf([{ ...site, keys: [{ key: OTHER_KEY, keyId: '12' }] }]), 102],
    ['allowed again', snapshotOf([site]), 'allow'],
    ['allowlist changed', snapshotOf([{ ...site, cidrs: ['198.51.100.0/24'] }]), 103],
    ['allowed again', snapshotOf([site]), 'allow'],
    ['site disabled', snapshotOf([{ ...site, enabled: false }]), 101],
    ['site deleted', snapshotOf([]), 101],
    ['key expired', snapshotOf([{ ...site, keys: [{ key: KEY, keyId: '11', expiresAt: 0 }] }]), 102],
    ['allowed again', snapshotOf([site]), 'allow'],
  ];

  it('a revoked key, a changed allowlist, a disabled site take effect at the next check', () => {
    let current = snapshots[0]![1];
    const service = serviceOf((input) => decide(input, current, Date.parse('2026-06-01T00:00:00Z'), NO_SUNSET), PLAIN_ALLOWED_RESPONSE);
    for (const [change, snapshot, expected] of snapshots) {
      current = snapshot;
      for (let round = 0; round < 2; round++) {
        const response = upstreamCheck.responseDeserialize(bytesSent(service, request)) as {
          status: { code: number };
          denied_response?: { body: string };
          dynamic_metadata?: { fields: Record<string, { stringValue: string }> } | null;
        };
        const verdict = response.status.code === 0 ? 'allow' : (JSON.parse(response.denied_response?.body ?? '{}') as { error: { id: number } }).error.id;
        assert.equal(verdict, expected, `${change}, check ${round + 1}`);
        if (expected === 'allow') assert.equal(response.dynamic_metadata?.fields['key_id']?.stringValue, '11');
      }
    }
  });
});
