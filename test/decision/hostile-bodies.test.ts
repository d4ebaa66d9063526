import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HOSTILE_BODIES, HOSTILE_KEY, HOSTILE_SITE_ID, HOSTILE_SNAPSHOT, hostileInput, outcomeOf, type HostileBody } from '../../bench/hostile-bodies.js';
import { loadConfig } from '../../src/config.js';
import { decide } from '../../src/decision/decide.js';
import { denialMessage } from '../../src/decision/error-catalogue.js';
import { viewCheckRequest } from '../../src/envoy/request-view.js';
import { NO_SUNSET } from '../support/snapshot.js';

// `make bench` measures these against a 100 ms target; here the bounds are loose, for a loaded machine.
const ABSOLUTE_LIMIT_MS = 1_000;
// The body check reads any body in one pass: no shape may cost much more than the plainest one, a
// single long string. The body check before this one cost 17 to 95 times as much on 8 of these shapes.
const RELATIVE_LIMIT = 10;
const RUNS = 7;

/** The best of `RUNS` decisions of each body, taken in turns so that both meet the same load. */
function bestTimes(body: HostileBody, plain: HostileBody): { readonly bodyMs: number; readonly plainMs: number } {
  const now = Date.now();
  const inputs = [hostileInput(body.text), hostileInput(plain.text)] as const;
  const best = [Infinity, Infinity];
  for (let run = 0; run <= RUNS; run++) {
    inputs.forEach((input, which) => {
      const started = performance.now();
      const decision = decide(input, HOSTILE_SNAPSHOT, now, NO_SUNSET);
      const ms = performance.now() - started;
      assert.equal(outcomeOf(decision), which === 0 ? body.expect : plain.expect);
      // The first turn warms up.
      if (run > 0) best[which] = Math.min(best[which] ?? Infinity, ms);
    });
  }
  return { bodyMs: best[0] ?? Infinity, plainMs: best[1] ?? Infinity };
}

describe('decide() on 1 MiB hostile bodies, with a valid key from an allowlisted address', () => {
  const plain = HOSTILE_BODIES.find((body) => body.name === 'one long string value');
  assert.ok(plain);

  for (const body of HOSTILE_BODIES) {
    it(`${body.name}: ${body.expect}, within ${ABSOLUTE_LIMIT_MS} ms and ${RELATIVE_LIMIT} times the plainest body`, () => {
      const { bodyMs, plainMs } = bestTimes(body, plain);
      assert.ok(bodyMs < ABSOLUTE_LIMIT_MS, `${bodyMs.toFixed(1)} ms`);
      assert.ok(bodyMs < RELATIVE_LIMIT * Math.max(plainMs, 1), `${bodyMs.toFixed(1)} ms against ${plainMs.toFixed(1)} ms for one long string`);
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
