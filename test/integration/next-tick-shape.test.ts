import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';

const MODULE = new URL('../../src/common/next-tick-shape.js', import.meta.url).href;

/**
 * A process that queues ticks, lets its queue empty and runs a full garbage collection, three times,
 * then queues ticks again and prints V8's view of process.nextTick (its inline caches among it).
 */
function ticksAcrossCollections(hold: boolean): string {
  const script = `
    import { holdNextTickShape } from ${JSON.stringify(MODULE)};
    if (${hold}) holdNextTickShape();
    const ticks = () => Promise.all(Array.from({ length: 100 }, () => new Promise((resolve) => process.nextTick(resolve, 1))));
    for (let round = 0; round < 3; round++) {
      await ticks();
      await new Promise((resolve) => setImmediate(resolve));
      gc();
    }
    await ticks();
    %DebugPrint(process.nextTick);
  `;
  const run = spawnSync(process.execPath, ['--allow-natives-syntax', '--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout;
}

/** The states of the inline caches that build each queue entry of process.nextTick (an object literal). */
function entryCacheStates(debugPrint: string): string[] {
  return [...debugPrint.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((match) => match[1] ?? '');
}

describe('holdNextTickShape', () => {
  it("keeps process.nextTick's entry-building caches monomorphic across full collections with an empty queue", (t) => {
    const held = entryCacheStates(ticksAcrossCollections(true));
    if (held.length === 0) {
      // Node 26.12.1 builds each entry with `new TickObject(…)`: its hidden class lives as long as the class.
      assert.match(process.nextTick.toString(), /new TickObject\(/, 'V8 printed no DefineKeyedOwnPropertyInLiteral cache for process.nextTick');
      t.skip(`Node ${process.version} builds process.nextTick's entries with a class, not an object literal: no cache to keep monomorphic`);
      return;
    }
    assert.deepEqual(held.filter((state) => state !== 'MONOMORPHIC'), [], `cache states: ${held.join(', ')}`);
    // What it prevents, on the Node of this run (megamorphic on Node 20 and 26).
    t.diagnostic(`without it: ${entryCacheStates(ticksAcrossCollections(false)).join(', ')}`);
  });
});
