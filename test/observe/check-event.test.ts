import type { ServerUnaryCall } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { loadConfig, type ClientIpSource } from '../../src/config.js';
import { decide } from '../../src/decision/decide.js';
import { createAuthorizationService } from '../../src/envoy/authorization-service.js';
import type { CheckRequestMessage, CheckResponseMessage } from '../../src/envoy/messages.js';
import { viewCheckRequest } from '../../src/envoy/request-view.js';
import { checkEvent } from '../../src/observe/check-event.js';
import { MAX_LOGGED_CHARS } from '../../src/common/log-text.js';
import { createLogger } from '../../src/observe/logger.js';
import { checkRequest, type CheckArguments } from '../support/envoy-client.js';
import { NO_SUNSET, snapshotOf } from '../support/snapshot.js';

const NOW = Date.parse('2026-06-01T00:00:00Z');

/** Every string in an event, however deep. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (typeof value !== 'object' || value === null) return [];
  return Object.values(value).flatMap(strings);
}

/** Any six characters in a row of the key, dashes or not, found in the text: more than a masked key shows. */
function holdsKeyPart(text: string, key: string): boolean {
  const haystacks = [text.toLowerCase(), text.toLowerCase().replaceAll('-', '')];
  for (const needle of [key.toLowerCase(), key.toLowerCase().replaceAll('-', '')]) {
    for (let start = 0; start + 6 <= needle.length; start++) {
      const part = needle.slice(start, start + 6);
      if (haystacks.some((haystack) => haystack.includes(part))) return true;
    }
  }
  return false;
}

/** What the observer of a service on `snapshot` is handed for one CheckRequest. */
function observedEvents(request: unknown, snapshot: ReturnType<typeof snapshotOf>): unknown[] {
  const events: unknown[] = [];
  const service = createAuthorizationService({
    clientIpSource: { kind: 'peer' },
    maxBodyBytes: loadConfig({}).maxBodyBytes,
    authorize: (input) => decide(input, snapshot, NOW, NO_SUNSET),
    onDecision: (event) => events.push(event),
    onFailure: (event) => events.push(event),
    logger: createLogger('silent'),
  });
  const call = { request } as unknown as ServerUnaryCall<CheckRequestMessage, CheckResponseMessage>;
  service.Check(call, () => undefined);
  return events;
}

describe('the event observers are handed', () => {
  /** A request for each error id and for an allow, carrying the partner's key (and sometimes another) in header and body. */
  const cases: Array<{ name: string; expect: 'allowed' | number; request: (key: string, other: string) => CheckArguments }> = [
    { name: 'allowed', expect: 'allowed', request: (key) => ({ authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) }) },
    { name: '108 no header, key in body', expect: 108, request: (key) => ({ body: JSON.stringify({ siteid: 1001, apikey: key }) }) },
    { name: '108 header with three parts', expect: 108, request: (key) => ({ authorization: `1001:${key}:${key}`, body: key }) },
    { name: '108 site id not a number', expect: 108, request: (key) => ({ authorization: `acme:${key}` }) },
    { name: '108 key not a UUID', expect: 108, request: (key) => ({ authorization: `1001:${key}0` }) },
    { name: '108 key upper-case with a space', expect: 108, request: (key) => ({ authorization: `1001: ${key.toUpperCase()}` }) },
    { name: '101 unknown site', expect: 101, request: (key) => ({ authorization: `4242:${key}`, body: JSON.stringify({ siteid: 4242, apikey: key }) }) },
    { name: '101 disabled site', expect: 101, request: (key) => ({ authorization: `1002:${key}` }) },
    { name: '103 address not allowlisted', expect: 103, request: (key) => ({ authorization: `1001:${key}`, ip: '198.51.100.9' }) },
    { name: '102 key not of the site', expect: 102, request: (_key, other) => ({ authorization: `1001:${other}`, body: JSON.stringify({ siteid: 1001, apikey: other }) }) },
    { name: '104 body apikey differs', expect: 104, request: (key, other) => ({ authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: other }) }) },
    { name: '104 body not JSON', expect: 104, request: (key) => ({ authorization: `1001:${key}`, body: `siteid=1001&apikey=${key}` }) },
    { name: '104 body missing', expect: 104, request: (key) => ({ authorization: `1001:${key}` }) },
  ];

  for (const c of cases) {
    it(`holds no part of a submitted key beyond the masked last five: ${c.name}`, () => {
      for (let round = 0; round < 25; round++) {
        // Random keys each round, upper- or lower-case: a leak cannot hide behind one lucky value.
        const key = round % 2 ? randomUUID().toUpperCase() : randomUUID();
        const other = randomUUID();
        const snapshot = snapshotOf([
          { siteId: '1001', keys: [{ key, keyId: '11' }], cidrs: ['203.0.113.0/24'] },
          { siteId: '1002', enabled: false, keys: [{ key, keyId: '12' }], cidrs: ['203.0.113.0/24'] },
        ]);
        const events = observedEvents(checkRequest(c.request(key, other)), snapshot);
        assert.equal(events.length, 1);
        const event = events[0] as { outcome: string; errorId?: number };
        assert.equal(event.outcome === 'allowed' ? 'allowed' : event.errorId, c.expect, 'the case tests what it says');
        for (const text of strings(event)) {
          assert.ok(!holdsKeyPart(text, key) && !holdsKeyPart(text, other), `an event field holds part of a key: ${JSON.stringify(text)}`);
        }
      }
    });
  }

  const site = snapshotOf([{ siteId: '1001', keys: [{ key: '6f1c1e0a-8a4b-4c52-9d3e-0b7a2c9d4e5f', keyId: '11' }], cidrs: ['203.0.113.0/24'] }]);
  const KEY = '6f1c1e0a-8a4b-4c52-9d3e-0b7a2c9d4e5f';
  const fields: Array<{ name: string; args: CheckArguments; source?: ClientIpSource; expect: Record<string, unknown> }> = [
    {
      name: 'an allow names the site and key id; the site is known',
      args: { authorization: `1001:${KEY}`, body: JSON.stringify({ siteid: 1001, apikey: KEY }) },
      expect: { outcome: 'allowed', errorId: undefined, siteId: '1001', siteKnown: true, keyId: '11', maskedKey: undefined, clientIp: '203.0.113.7', requestId: 'test-request' },
    },
    {
      name: '108 has no site: what the header held is not trusted',
      args: { authorization: `10x1:${KEY}` },
      expect: { outcome: 'denied', errorId: 108, rule: 'site-id-invalid', siteId: undefined, siteKnown: false, maskedKey: undefined, keyId: undefined },
    },
    {
      name: '101 names the id asked for but does not call it known',
      args: { authorization: `4242:${KEY}` },
      expect: { outcome: 'denied', errorId: 101, siteId: '4242', siteKnown: false, maskedKey: '*****d4e5f', errorMessage: 'Site ID 4242 is invalid' },
    },
    {
      name: '103 names the site and the address',
      args: { authorization: `1001:${KEY}`, ip: '198.51.100.9' },
      expect: { outcome: 'denied', errorId: 103, siteId: '1001', siteKnown: true, clientIp: '198.51.100.9', maskedKey: '*****d4e5f' },
    },
    {
      name: '102 masks the key it refused',
      args: { authorization: '1001:00000000-0000-4000-8000-0000000fedcb' },
      expect: { outcome: 'denied', errorId: 102, siteId: '1001', siteKnown: true, maskedKey: '*****fedcb', keyId: undefined },
    },
    {
      name: '104 names the body rule and the key id',
      args: { authorization: `1001:${KEY}`, body: JSON.stringify({ siteid: 1002, apikey: KEY }) },
      expect: { outcome: 'denied', errorId: 104, rule: 'siteid-mismatch', keyId: '11', siteKnown: true, bodyBytes: 63 },
    },
    {
      name: 'a hostile request id and client address are clipped',
      args: { authorization: `1001:${KEY}`, headers: { 'x-request-id': 'r'.repeat(10_000), 'x-client-ip': 'i'.repeat(10_000) } },
      source: { kind: 'header', name: 'x-client-ip' },
      expect: { errorId: 103, requestId: 'r'.repeat(MAX_LOGGED_CHARS), clientIp: 'i'.repeat(MAX_LOGGED_CHARS) },
    },
  ];
  for (const c of fields) {
    it(`is built from the decision and the request view: ${c.name}`, () => {
      const view = viewCheckRequest(checkRequest(c.args) as CheckRequestMessage, {
        clientIpSource: c.source ?? { kind: 'peer' },
        maxBodyBytes: loadConfig({}).maxBodyBytes,
      });
      const event = checkEvent(view, decide(view.input, site, NOW, NO_SUNSET), 0.000042);
      const picked = Object.fromEntries(Object.keys(c.expect).map((name) => [name, (event as unknown as Record<string, unknown>)[name]]));
      assert.deepEqual(picked, c.expect);
      assert.equal(event.durationSeconds, 0.000042);
    });
  }
});
