import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HOSTILE_BODIES, HOSTILE_KEY, HOSTILE_SITE_ID, HOSTILE_SNAPSHOT, hostileInput, outcomeOf } from '../../bench/hostile-bodies.js';
import { loadConfig } from '../../src/config.js';
import { decide } from '../../src/decision/decide.js';
import { denialMessage } from '../../src/decision/error-catalogue.js';
import { viewCheckRequest } from '../../src/envoy/request-view.js';
import { NO_SUNSET } from '../support/snapshot.js';

// What each shape costs is measured by `make bench` (bench/hostile-bodies.ts) against its 100 ms
// target: performance bounds live there, not in tests that a loaded machine can fail.
describe('decide() on 1 MiB hostile bodies, with a valid key from an allowlisted address', () => {
  for (const body of HOSTILE_BODIES) {
    it(`${body.name}: ${body.expect}`, () => {
      assert.equal(outcomeOf(decide(hostileInput(body.text), HOSTILE_SNAPSHOT, Date.now(), NO_SUNSET)), body.expect);
    });
  }
});

describe('a body over MAX_BODY_BYTES', () => {
  const maxBodyBytes = loadConfig({}).maxBodyBytes;
  const decideRawBody = (rawBody: Buffer) => {
    const request = {
      attributes: {
        source: { address: { socket_address: { address: '203.0.113.7' } } },
        request: { http: { headers: { authorization: `${HOSTILE_SITE_ID}:${HOSTILE_KEY}` }, raw_body: rawBody } },
      },
    };
    const { input } = viewCheckRequest(request, { clientIpSource: { kind: 'peer' }, maxBodyBytes });
    return decide(input, HOSTILE_SNAPSHOT, Date.now(), NO_SUNSET);
  };
  const credentials = `{"siteid":${HOSTILE_SITE_ID},"apikey":"${HOSTILE_KEY}","padding":"`;
  const padded = (bytes: number): string => `${credentials}${'x'.repeat(bytes - credentials.length - 2)}"}`;

  it('is allowed up to the limit itself', () => {
    assert.equal(outcomeOf(decideRawBody(Buffer.from(padded(maxBodyBytes)))), 'allow');
  });

  const oversized: Array<[string, Buffer]> = [
    ['valid JSON with the right credentials', Buffer.from(padded(maxBodyBytes + 1))],
    ['not JSON', Buffer.from(padded(maxBodyBytes + 2).slice(0, -1))],
    ['not UTF-8', Buffer.concat([Buffer.from(padded(maxBodyBytes)), Buffer.from([0xff])])],
    ['deep nesting never closed', Buffer.from('['.repeat(maxBodyBytes + 1))],
  ];
  for (const [name, rawBody] of oversized) {
    it(`is refused unread (104 body-too-large, naming the limit) when it is ${name}`, () => {
      const decision = decideRawBody(rawBody);
      assert.equal(outcomeOf(decision), 'body-too-large');
      assert.ok(decision.outcome === 'deny');
      assert.equal(
        denialMessage(decision.denial),
        `Request body is larger than the authorization service accepts (${maxBodyBytes} bytes), so siteid and apikey cannot be verified`,
      );
    });
  }
});
