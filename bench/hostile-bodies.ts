import assert from 'node:assert/strict';
import { decide } from '../src/decision/decide.js';
import type { BodyRule, CheckInput, CredentialSnapshot, Decision } from '../src/decision/types.js';
import { NO_SUNSET, snapshotOf } from '../test/support/snapshot.js';

/**
 * Issue #8: request bodies shaped to make the body check (104) slow, each as large as Envoy's
 * max_request_bytes and our MAX_BODY_BYTES default let through, sent with a valid key from an
 * allowlisted address so that the body is actually examined.
 */
export const HOSTILE_BODY_BYTES = 1_048_576;

export const HOSTILE_SITE_ID = '1001';
export const HOSTILE_KEY = '3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b';
const CLIENT_ADDRESS = '203.0.113.7';
const CREDENTIALS = `"siteid":${HOSTILE_SITE_ID},"apikey":"${HOSTILE_KEY}"`;

export interface HostileBody {
  readonly name: string;
  readonly text: string;
  /** allow, or the 104 rule the body breaks. */
  readonly expect: 'allow' | BodyRule;
}

const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/** `head`, then `unit(i)` for i = 0, 1, … as long as the whole still fits in HOSTILE_BODY_BYTES with `tail`. */
function filled(head: string, unit: (i: number) => string, tail: string): string {
  const parts = [head];
  let bytes = utf8Bytes(head) + utf8Bytes(tail);
  for (let i = 0; ; i++) {
    const next = unit(i);
    const size = utf8Bytes(next);
    if (bytes + size > HOSTILE_BODY_BYTES) break;
    parts.push(next);
    bytes += size;
  }
  parts.push(tail);
  return parts.join('');
}

/** `count` copies of `text`, at most `bytes` in UTF-8 with the `reserve` bytes kept free. */
function repeatedToFit(text: string, reserve: number): string {
  return text.repeat(Math.floor((HOSTILE_BODY_BYTES - reserve) / utf8Bytes(text)));
}

const NON_ASCII_LETTERS = 'éüñçøåßœæłżšđħķŧŋ';
const nonAsciiName = (i: number): string =>
  [...String(i)].map((digit) => NON_ASCII_LETTERS[Number(digit)]).join('') + 'ŝ';

function deepArray(closed: boolean): string {
  const head = `{${CREDENTIALS},"deep":`;
  const depth = Math.floor((HOSTILE_BODY_BYTES - head.length - 1) / (closed ? 2 : 1));
  return `${head}${'['.repeat(depth)}${closed ? `${']'.repeat(depth)}}` : ''}`;
}

function longName(): string {
  const head = `{${CREDENTIALS},"`;
  const tail = '":1}';
  return `${head}${repeatedToFit('ñ', utf8Bytes(head) + tail.length)}${tail}`;
}

/** A name that can fold to siteid, as `s` and `iteid` around marks that folding drops, is read to its end. */
function longMarkedName(): string {
  const head = `{${CREDENTIALS},"s`;
  const tail = 'iteid":1}';
  return `${head}${repeatedToFit('\u0301', utf8Bytes(head) + tail.length)}${tail}`;
}

function longValue(): string {
  const head = `{${CREDENTIALS},"note":"`;
  const tail = '"}';
  // Plain text, escapes and non-ASCII, as free text in a partner's order might hold.
  return `${head}${repeatedToFit('Grüße aus Zürich \\"quoted\\" \\u00e9\\n', utf8Bytes(head) + tail.length)}${tail}`;
}

/** A string value of nothing but escapes: each is read on its own, whatever reads plain text faster. */
function escapesOnly(): string {
  const head = `{${CREDENTIALS},"note":"`;
  const tail = '"}';
  return `${head}${repeatedToFit('\\n\\u00e9\\"', utf8Bytes(head) + tail.length)}${tail}`;
}

/** The shapes `make bench` decides and test/decision/hostile-bodies.test.ts bounds. */
export const HOSTILE_BODIES: readonly HostileBody[] = [
  { name: 'many non-ASCII top-level names', text: filled(`{${CREDENTIALS}`, (i) => `,"${nonAsciiName(i)}":${i}`, '}'), expect: 'allow' },
  { name: 'many ASCII top-level names', text: filled(`{${CREDENTIALS}`, (i) => `,"name${i}":${i}`, '}'), expect: 'allow' },
  {
    name: 'many names of credential letters',
    text: filled(`{${CREDENTIALS}`, (i) => `,"${['ſiteie', 'apikei', 'SITEI', 'ａｐｉｋ', 'ſ\u0301'][i % 5]}":${i % 10}`, '}'),
    expect: 'allow',
  },
  { name: 'deep [ nesting, balanced', text: deepArray(true), expect: 'allow' },
  { name: 'deep [ nesting, never closed', text: deepArray(false), expect: 'body-not-json' },
  { name: 'one long non-ASCII name', text: longName(), expect: 'allow' },
  { name: 'one long name of combining marks', text: longMarkedName(), expect: 'siteid-duplicate' },
  { name: 'one long string value', text: longValue(), expect: 'allow' },
  { name: 'one long string of escapes', text: escapesOnly(), expect: 'allow' },
  {
    name: 'many small nested objects',
    text: filled(`{${CREDENTIALS},"items":[{}`, (i) => `,{"id":${i},"tags":["a","b"],"price":{"amount":1.5e2,"currency":"EUR"}}`, ']}'),
    expect: 'allow',
  },
  {
    name: 'duplicate credential names',
    text: filled(`{${CREDENTIALS}`, (i) => [`,"siteid":${HOSTILE_SITE_ID}`, ',"ſiteid":1', ',"SiteID":1', ',"ｓｉｔｅｉｄ":1'][i % 4] ?? '', '}'),
    expect: 'siteid-duplicate',
  },
];

export const HOSTILE_SNAPSHOT: CredentialSnapshot = snapshotOf([
  { siteId: HOSTILE_SITE_ID, cidrs: ['203.0.113.0/24'], keys: [{ key: HOSTILE_KEY, keyId: '11' }] },
]);

/** The check Envoy would send for `text`: a valid key from an allowlisted address. */
export function hostileInput(text: string): CheckInput {
  return {
    authorization: `${HOSTILE_SITE_ID}:${HOSTILE_KEY}`,
    clientAddress: CLIENT_ADDRESS,
    // Decoded from bytes as the request view decodes raw_body: one flat string, not the rope that
    // building it by concatenation leaves, which would be slower to read.
    body: { kind: 'text', text: new TextDecoder().decode(Buffer.from(text, 'utf8')) },
    bodyPartial: false,
    bodyCredentials: 'required',
  };
}

/** allow, or the 104 rule; anything else means the body was never examined. */
export function outcomeOf(decision: Decision): string {
  if (decision.outcome === 'allow') return 'allow';
  return decision.denial.errorId === 104 ? decision.denial.rule : `error ${decision.denial.errorId}`;
}

/** Milliseconds for one decide() of `body`, the best and the worst of `runs` after a warm-up. */
export function timeDecisions(body: HostileBody, runs: number): { readonly bestMs: number; readonly worstMs: number; readonly meanMs: number } {
  const input = hostileInput(body.text);
  const now = Date.now();
  assert.equal(outcomeOf(decide(input, HOSTILE_SNAPSHOT, now, NO_SUNSET)), body.expect, body.name);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const decision = decide(input, HOSTILE_SNAPSHOT, now, NO_SUNSET);
    times.push(performance.now() - started);
    // Checked on every run: a body that was refused early would be measured as if it were examined.
    assert.equal(outcomeOf(decision), body.expect, body.name);
  }
  return {
    bestMs: Math.min(...times),
    worstMs: Math.max(...times),
    meanMs: times.reduce((sum, t) => sum + t, 0) / times.length,
  };
}

/** `make bench`: each 1 MiB hostile body decided by decide(); the target is 100 ms each. */
export function runHostileBodiesBench(runs = 20): void {
  console.log(`decide() on 1 MiB hostile bodies, valid key and allowlisted IP, ${runs} runs each (ms per decision):`);
  for (const body of HOSTILE_BODIES) {
    const { bestMs, meanMs, worstMs } = timeDecisions(body, runs);
    console.log(
      `  ${body.name.padEnd(36)} ${(utf8Bytes(body.text) / 1024).toFixed(0).padStart(5)} KiB  → ${body.expect.padEnd(16)} ` +
        `mean ${meanMs.toFixed(1).padStart(7)}  best ${bestMs.toFixed(1).padStart(7)}  worst ${worstMs.toFixed(1).padStart(7)}`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) runHostileBodiesBench(Number(process.argv[2] ?? 20));
