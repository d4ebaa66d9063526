import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `probe` until it holds; fails naming `what` (and the last value seen) after `withinMs`. */
export async function eventually<T>(what: string, probe: () => Promise<T>, holds: (value: T) => boolean, withinMs: number): Promise<T> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    const value = await probe();
    if (holds(value)) return value;
    if (performance.now() > deadline) assert.fail(`${what}: not within ${withinMs} ms (last seen: ${JSON.stringify(value)})`);
    await sleep(50);
  }
}
