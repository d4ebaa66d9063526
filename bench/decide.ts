import assert from 'node:assert/strict';
import { decide } from '../src/decision/decide.js';
import type { CheckInput } from '../src/decision/types.js';
import { snapshotOf } from '../test/support/snapshot.js';

/** Throughput of the pure decision on an allowed request, over a snapshot of 10,000 sites. */
export async function runDecideBench(): Promise<void> {
  const snapshot = snapshotOf(
    Array.from({ length: 10_000 }, (_, index) => {
      const i = index + 1;
      return { siteId: String(i), keys: [{ key: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, keyId: String(i) }], cidrs: [`10.${(i >> 8) & 255}.${i & 255}.0/24`] };
    }),
  );
  const sunset = { sunsetAt: Date.parse('2026-12-31T23:59:59Z'), enforce: false, guideUrl: undefined };
  const key = '00000000-0000-4000-8000-000000004242';
  const input: CheckInput = {
    authorization: `4242:${key}`,
    clientAddress: '10.16.146.9',
    body: { kind: 'text', text: JSON.stringify({ siteid: 4242, apikey: key, order: { items: [1, 2, 3] } }) },
    bodyPartial: false,
    bodyCredentials: 'required',
  };
  const now = Date.now();
  for (let i = 0; i < 20_000; i++) decide(input, snapshot, now, sunset);
  const loops = 200_000;
  const started = process.hrtime.bigint();
  for (let i = 0; i < loops; i++) {
    // Asserting each loop keeps the benchmark honest: a denial would be measured as if it were a check.
    assert.equal(decide(input, snapshot, now, sunset).outcome, 'allow');
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  console.log(`decide (allowed request, 10,000 sites): ${Math.round(loops / seconds).toLocaleString('en')} decisions/s, ` +
    `${((seconds / loops) * 1e6).toFixed(2)} µs each`);
}

if (import.meta.url === `file://${process.argv[1]}`) await runDecideBench();
