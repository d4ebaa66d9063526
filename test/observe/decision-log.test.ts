import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config.js';
import type { LogLevel } from '../../src/config.js';
import { decide } from '../../src/decision/decide.js';
import type { TokenVerdict } from '../../src/decision/types.js';
import type { CheckRequestMessage } from '../../src/envoy/messages.js';
import { viewCheckRequest } from '../../src/envoy/request-view.js';
import { checkEvent, type CheckEvent } from '../../src/observe/check-event.js';
import { createDecisionLog, REPEAT_WINDOWS_MAX, type DecisionLogOptions } from '../../src/observe/decision-log.js';
import { eventually } from '../support/eventually.js';
import { MAX_LOGGED_CHARS } from '../../src/common/log-text.js';
import { createLogger } from '../../src/observe/logger.js';
import { checkRequest, type CheckArguments } from '../support/envoy-client.js';
import { NO_SUNSET, snapshotOf } from '../support/snapshot.js';

const KEY = '6f1c1e0a-8a4b-4c52-9d3e-0b7a2c9d4e5f';
const NOW = Date.parse('2026-06-01T00:00:00Z');
const SNAPSHOT = snapshotOf(
  [
    { siteId: '1001', keys: [{ key: KEY, keyId: '11' }], cidrs: ['203.0.113.0/24'] },
    { siteId: '1002', enabled: false, keys: [{ key: KEY, keyId: '12' }], cidrs: ['203.0.113.0/24'] },
    { siteId: '1005', keys: [{ key: KEY, keyId: '15' }], cidrs: ['203.0.113.0/24'] },
  ],
  // A brownout of site 1005 alone, so that its valid credentials get 105.
  [{ id: '4', from: NOW - 60_000, until: NOW + 3_600_000, siteIds: new Set(['1005']), dryRun: false }],
);
const BODY = JSON.stringify({ siteid: 1001, apikey: KEY });

/** A decision log writing JSON lines into an array, and a way to feed it a request as the service would. */
function decisionLog(options: Partial<DecisionLogOptions> & { level?: LogLevel } = {}) {
  const lines: Array<Record<string, unknown>> = [];
  let raw = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      raw += chunk.toString();
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const log = createDecisionLog(createLogger(options.level ?? 'info', sink), { allowedSampleRate: 0, repeatWindowSeconds: 1, ...options });
  const event = (args: CheckArguments, bearer?: TokenVerdict): CheckEvent => {
    const view = viewCheckRequest(checkRequest({ body: BODY, ...args }) as CheckRequestMessage, {
      clientIpSource: { kind: 'peer' },
      maxBodyBytes: loadConfig({}).maxBodyBytes,
    });
    return checkEvent(view, decide(bearer === undefined ? view.input : { ...view.input, bearer }, SNAPSHOT, NOW, NO_SUNSET), 0.000031);
  };
  return { lines, raw: () => raw, log, check: (args: CheckArguments, bearer?: TokenVerdict) => log.record(event(args, bearer)) };
}

describe('decision log', () => {
  const denials: Array<{ name: string; args: CheckArguments; expect: Record<string, unknown> }> = [
    {
      name: '108 says which header rule failed',
      args: { authorization: `1001;${KEY}` },
      expect: {
        errorId: 108,
        code: 'HEADER_INVALID',
        rule: 'header-malformed',
        reason: 'the Authorization header is not <site id>:<API key> with exactly one colon, nor Bearer <token>',
        siteId: undefined,
        maskedKey: undefined,
        keyId: undefined,
      },
    },
    {
      name: '108 for a missing header',
      args: {},
      expect: { errorId: 108, rule: 'header-missing', reason: 'the request has no Authorization header, or an empty one; a partner sends Authorization: <site id>:<API key>' },
    },
    {
      name: '101 names the site asked for and the masked key',
      args: { authorization: `1002:${KEY}` },
      expect: {
        errorId: 101,
        code: 'SITE_INVALID',
        siteId: '1002',
        maskedKey: '*****d4e5f',
        keyId: undefined,
        rule: undefined,
        reason: 'site 1002 is not a registered site, or it is disabled',
      },
    },
    {
      name: '103 names the client IP the service saw',
      args: { authorization: `1001:${KEY}`, ip: '198.51.100.9' },
      expect: {
        errorId: 103,
        code: 'IP_NOT_WHITELISTED',
        siteId: '1001',
        clientIp: '198.51.100.9',
        maskedKey: '*****d4e5f',
        reason: "client IP 198.51.100.9 is not on site 1001's allowlist",
      },
    },
    {
      name: '102 names the masked key refused',
      args: { authorization: '1001:00000000-0000-4000-8000-0000000fedcb', body: JSON.stringify({ siteid: 1001, apikey: '00000000-0000-4000-8000-0000000fedcb' }) },
      expect: {
        errorId: 102,
        code: 'API_KEY_INVALID',
        siteId: '1001',
        maskedKey: '*****fedcb',
        keyId: undefined,
        reason: 'API key *****fedcb is not an active key of site 1001 (unknown, revoked or expired)',
      },
    },
    {
      name: '104 names the body rule and the key that passed',
      args: { authorization: `1001:${KEY}`, body: JSON.stringify({ siteid: 1001, apikey: KEY, extra: { apikey: 1 }, ApiKey: KEY }) },
      expect: {
        errorId: 104,
        code: 'BODY_CREDENTIALS_INVALID',
        siteId: '1001',
        keyId: '11',
        maskedKey: '*****d4e5f',
        rule: 'apikey-duplicate',
        reason: 'Request body has more than one apikey',
      },
    },
  ];
  for (const c of denials) {
    it(`writes one line per denial: ${c.name}`, () => {
      const log = decisionLog();
      log.check({ headers: { 'x-request-id': 'req-7' }, ...c.args });
      assert.equal(log.lines.length, 1);
      const line = log.lines[0] ?? {};
      assert.equal(line.event, 'check.denied');
      assert.equal(line.msg, 'check denied');
      assert.equal(line.level, 30, 'at info');
      assert.equal(line.requestId, 'req-7');
      assert.equal(line.durationSeconds, 0.000031);
      const picked = Object.fromEntries(Object.keys(c.expect).map((name) => [name, line[name]]));
      assert.deepEqual(picked, c.expect);
      assert.ok(!log.raw().includes(KEY), 'the full key reached the log');
      assert.ok(!log.raw().toLowerCase().includes('authorization"'), 'an Authorization header reached the log');
      assert.ok(!log.raw().includes('"siteid"'), 'the body reached the log');
    });
  }

  // Every field of each denial line, written out: a field lost, renamed or added (a body, a header)
  // fails here. Only the time is left out.
  const lines: Array<{ readonly errorId: number; readonly args: CheckArguments; readonly line: Record<string, unknown> }> = [
    {
      errorId: 108,
      args: {},
      line: { errorId: 108, code: 'HEADER_INVALID', rule: 'header-missing', reason: 'the request has no Authorization header, or an empty one; a partner sends Authorization: <site id>:<API key>' },
    },
    {
      errorId: 101,
      args: { authorization: `1002:${KEY}`, body: JSON.stringify({ siteid: 1002, apikey: KEY }) },
      line: { siteId: '1002', authMethod: 'api_key', maskedKey: '*****d4e5f', errorId: 101, code: 'SITE_INVALID', reason: 'site 1002 is not a registered site, or it is disabled' },
    },
    {
      errorId: 103,
      args: { authorization: `1001:${KEY}`, ip: '198.51.100.9' },
      line: {
        authMethod: 'api_key',
        siteId: '1001',
        maskedKey: '*****d4e5f',
        clientIp: '198.51.100.9',
        errorId: 103,
        code: 'IP_NOT_WHITELISTED',
        reason: "client IP 198.51.100.9 is not on site 1001's allowlist",
      },
    },
    {
      errorId: 102,
      args: { authorization: '1001:00000000-0000-4000-8000-0000000fedcb' },
      line: {
        authMethod: 'api_key',
        siteId: '1001',
        maskedKey: '*****fedcb',
        errorId: 102,
        code: 'API_KEY_INVALID',
        reason: 'API key *****fedcb is not an active key of site 1001 (unknown, revoked or expired)',
      },
    },
    {
      errorId: 104,
      args: { authorization: `1001:${KEY}`, body: JSON.stringify({ siteid: 1002, apikey: KEY }) },
      line: {
        authMethod: 'api_key',
        siteId: '1001',
        keyId: '11',
        maskedKey: '*****d4e5f',
        errorId: 104,
        code: 'BODY_CREDENTIALS_INVALID',
        rule: 'siteid-mismatch',
        reason: 'Request body siteid does not match the site ID in the Authorization header',
      },
    },
    {
      errorId: 105,
      args: { authorization: `1005:${KEY}`, body: JSON.stringify({ siteid: 1005, apikey: KEY }) },
      line: {
        authMethod: 'api_key',
        siteId: '1005',
        keyId: '15',
        maskedKey: '*****d4e5f',
        errorId: 105,
        code: 'API_KEY_AUTH_RETIRED',
        reason:
          'API key authentication is switched off until 2026-06-01T01:00:00Z for a scheduled brownout ahead of its retirement on 2026-12-31; migrate to token-based authentication',
      },
    },
  ];
  for (const { errorId, args, line } of lines) {
    it(`writes exactly these fields for a ${errorId} denial`, () => {
      const log = decisionLog();
      log.check({ headers: { 'x-request-id': 'req-9' }, ...args });
      assert.equal(log.lines.length, 1);
      const { time, ...fields } = log.lines[0] ?? {};
      assert.equal(typeof time, 'string');
      assert.deepEqual(fields, {
        level: 30,
        service: 'sitekey-authz',
        msg: 'check denied',
        event: 'check.denied',
        requestId: 'req-9',
        clientIp: '203.0.113.7',
        durationSeconds: 0.000031,
        bodyBytes: 63,
        ...line,
      });
    });
  }

  it('clips hostile values', () => {
    const log = decisionLog();
    log.check({ authorization: `1001:${KEY}`, ip: '198.51.100.9', headers: { 'x-request-id': `x${'y'.repeat(100_000)}` } });
    assert.equal((log.lines[0]?.requestId as string).length, MAX_LOGGED_CHARS);
  });

  it('logs no allowed check at the default sample rate 0, and every one at 1', () => {
    const none = decisionLog({ allowedSampleRate: 0 });
    for (let i = 0; i < 100; i++) none.check({ authorization: `1001:${KEY}` });
    assert.equal(none.lines.length, 0);
    const all = decisionLog({ allowedSampleRate: 1 });
    all.check({ authorization: `1001:${KEY}`, headers: { 'x-request-id': 'req-ok' } });
    assert.equal(all.lines.length, 1);
    const line = all.lines[0] ?? {};
    assert.deepEqual(
      [line.event, line.level, line.requestId, line.siteId, line.keyId, line.clientIp, line.sampleRate],
      ['check.allowed', 30, 'req-ok', '1001', '11', '203.0.113.7', 1],
    );
    assert.ok(!all.raw().includes(KEY));
  });

  it('samples allowed checks at the configured rate', () => {
    let draw = 0;
    // Draws 0.00, 0.01, …, 0.99: exactly a quarter fall below 0.25.
    const log = decisionLog({ allowedSampleRate: 0.25, random: () => (draw++ % 100) / 100 });
    for (let i = 0; i < 400; i++) log.check({ authorization: `1001:${KEY}` });
    assert.equal(log.lines.length, 100);
  });

  it('still logs every allowed check at debug', () => {
    const log = decisionLog({ level: 'debug' });
    for (let i = 0; i < 3; i++) log.check({ authorization: `1001:${KEY}` });
    assert.deepEqual(log.lines.map((line) => [line.event, line.level]), Array(3).fill(['check.allowed', 20]));
  });

  it('hints at most once a minute that Envoy sends no body', () => {
    let now = 0;
    const log = decisionLog({ now: () => now });
    const bodyless = { authorization: `1001:${KEY}`, body: '', headers: { 'content-length': '42' } };
    log.check(bodyless);
    log.check(bodyless);
    now = 61_000;
    log.check(bodyless);
    const hints = log.lines.filter((line) => line.event === 'hint.with_request_body');
    assert.equal(hints.length, 2);
    assert.match(String(hints[0]?.msg), /with_request_body/);
    assert.equal(log.lines.filter((line) => line.rule === 'body-not-forwarded').length, 3);
  });

  it("hints at most once a minute that tokens are refused for want of the issuer's keys, naming where to look", () => {
    let now = 0;
    const log = decisionLog({ now: () => now, repeatWindowSeconds: 0 });
    const token = { authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln', body: '' };
    for (const at of [0, 30_000, 61_000]) {
      now = at;
      log.check(token, { valid: false, rule: 'keys-unavailable' });
    }
    const hints = log.lines.filter((line) => line.event === 'hint.token_issuer_keys');
    assert.equal(hints.length, 2);
    assert.match(String(hints[0]?.msg), /TOKEN_JWKS_URL \(or TOKEN_ISSUER\) is reachable.*API keys are not affected/);
    const denials = log.lines.filter((line) => line.event === 'check.denied');
    assert.deepEqual(denials.map((line) => [line.errorId, line.rule]), Array(3).fill([106, 'keys-unavailable']));
  });

  describe('repeated denials', () => {
    const wrongKey = '00000000-0000-4000-8000-0000000fedcb';
    const refused = (requestId: string, ip = '203.0.113.7') => ({
      authorization: `1001:${wrongKey}`,
      body: JSON.stringify({ siteid: 1001, apikey: wrongKey }),
      ip,
      headers: { 'x-request-id': requestId },
    });

    it('logs the first of identical denials and counts the rest on one line when the window ends', () => {
      let now = 0;
      const log = decisionLog({ now: () => now });
      for (let i = 1; i <= 50; i++) log.check(refused(`req-${i}`));
      assert.deepEqual(log.lines.map((line) => [line.event, line.requestId]), [['check.denied', 'req-1']]);
      now = 1_000;
      log.check(refused('req-51'));
      const [first, repeated, next] = log.lines;
      assert.equal(log.lines.length, 3);
      assert.deepEqual(
        [repeated?.event, repeated?.repeats, repeated?.firstRequestId, repeated?.lastRequestId, repeated?.windowSeconds, repeated?.requestId],
        ['check.denied.repeated', 49, 'req-1', 'req-50', 1, undefined],
      );
      for (const field of ['siteId', 'maskedKey', 'clientIp', 'errorId', 'code', 'reason', 'authMethod']) {
        assert.deepEqual(repeated?.[field], first?.[field], `the repeated line's ${field}`);
      }
      assert.match(String(repeated?.msg), /request req-1\) repeated 49 more times/);
      assert.deepEqual([next?.event, next?.requestId], ['check.denied', 'req-51']);
      assert.ok(!log.raw().includes(wrongKey), 'the full key reached the log');
    });

    it('keeps denials that differ in address, key, site or error on lines of their own', () => {
      const log = decisionLog({ now: () => 0 });
      log.check(refused('a'));
      log.check(refused('b', '198.51.100.9'));
      log.check({ ...refused('c'), authorization: `1001:00000000-0000-4000-8000-0000000abcde`, body: JSON.stringify({ siteid: 1001, apikey: '00000000-0000-4000-8000-0000000abcde' }) });
      log.check({ ...refused('d'), authorization: `1002:${KEY}`, body: JSON.stringify({ siteid: 1002, apikey: KEY }) });
      log.check({ ...refused('e'), authorization: `1001;${KEY}` });
      assert.deepEqual(log.lines.map((line) => [line.requestId, line.errorId]), [['a', 102], ['b', 103], ['c', 102], ['d', 101], ['e', 108]]);
    });

    it('counts interleaved denials each in its own window', () => {
      let now = 0;
      const log = decisionLog({ now: () => now });
      for (let i = 0; i < 10; i++) {
        log.check(refused(`a-${i}`));
        log.check(refused(`b-${i}`, '198.51.100.9'));
      }
      now = 1_000;
      log.log.close();
      const repeated = log.lines.filter((line) => line.event === 'check.denied.repeated');
      assert.deepEqual(repeated.map((line) => [line.firstRequestId, line.lastRequestId, line.repeats]), [['a-0', 'a-9', 9], ['b-0', 'b-9', 9]]);
    });

    it('opens a new window for a denial repeated after its window was logged, and logs those repeats once', async () => {
      const log = decisionLog();
      for (let i = 0; i < 3; i++) log.check(refused(`req-${i}`));
      await eventually(
        'the window ended by its timer',
        async () => log.lines.some((line) => line.event === 'check.denied.repeated'),
        (ended) => ended,
        10_000,
      );
      log.check(refused('req-3'));
      log.log.close();
      assert.deepEqual(
        log.lines.map((line) => [line.event, line.requestId ?? line.repeats]),
        [['check.denied', 'req-0'], ['check.denied.repeated', 2], ['check.denied', 'req-3']],
      );
    });

    it('logs every denial with a window of 0', () => {
      const log = decisionLog({ repeatWindowSeconds: 0, now: () => 0 });
      for (let i = 0; i < 5; i++) log.check(refused(`req-${i}`));
      assert.deepEqual(log.lines.map((line) => line.event), Array(5).fill('check.denied'));
    });

    it('logs the count by itself once the window is over, and what is left at close', async () => {
      const timed = decisionLog();
      for (let i = 0; i < 3; i++) timed.check(refused(`req-${i}`));
      const repeated = await eventually(
        'the repeats logged without a further denial',
        async () => timed.lines.find((line) => line.event === 'check.denied.repeated'),
        (line) => line !== undefined,
        10_000,
      );
      assert.equal(repeated?.repeats, 2);
      const closing = decisionLog({ repeatWindowSeconds: 60 });
      for (let i = 0; i < 4; i++) closing.check(refused(`req-${i}`));
      closing.log.close();
      assert.deepEqual(closing.lines.map((line) => [line.event, line.repeats]), [['check.denied', undefined], ['check.denied.repeated', 3]]);
    });

    it('counts in at most REPEAT_WINDOWS_MAX windows; beyond, denials are logged each', () => {
      const log = decisionLog({ now: () => 0 });
      const addresses = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
      for (let n = 0; n < REPEAT_WINDOWS_MAX + 2; n++) log.check(refused(`req-${n}`, addresses(n)));
      for (let i = 0; i < 2; i++) log.check(refused(`again-${i}`, addresses(REPEAT_WINDOWS_MAX + 1)));
      assert.equal(log.lines.length, REPEAT_WINDOWS_MAX + 4);
      log.check(refused('counted', addresses(0)));
      assert.equal(log.lines.length, REPEAT_WINDOWS_MAX + 4);
    });
  });
});
