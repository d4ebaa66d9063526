import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `probe` until it holds; fails naming `what` (and the last value or error seen) after
 * `withinMs`. A probe that throws (a connection reset while a server restarts) counts as "not yet":
 * the state is what is waited for, and only its absence at the deadline fails.
 */
export async function eventually<T>(what: string, probe: () => Promise<T>, holds: (value: T) => boolean, withinMs: number): Promise<T> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    let seen: string;
    try {
      const value = await probe();
      if (holds(value)) return value;
      seen = JSON.stringify(value);
    } catch (error) {
      seen = `an error: ${error instanceof Error ? error.message : String(error)}`;
    }
    if (performance.now() > deadline) assert.fail(`${what}: not within ${withinMs} ms (last seen: ${seen})`);
    await sleep(50);
  }
}
