import { executionAsyncResource } from 'node:async_hooks';

/** One queue entry of process.nextTick, held for the life of the process; see holdNextTickShape. */
let heldTickEntry: object | undefined;

/**
 * Keeps one entry of process.nextTick's queue alive for good, so that every later entry has the same
 * hidden class. On Node 20 and on Node 26 up to 26.10 at least, each entry is an object literal, and a full
 * garbage collection that runs while no tick is queued (the snapshot load at start-up, the memory
 * reducer when idle) frees the entries' hidden classes; the next tick builds new ones, and the inline
 * caches that build every entry turn megamorphic for the life of the process. gRPC schedules several
 * ticks per check: such a process spent 3–5 µs more per check. Node 26.12.1 builds entries with a class
 * (TickObject), whose hidden class lives as long as the class; holding one entry costs nothing there.
 * Inside a tick's callback, the tick's entry is the execution's async resource.
 */
export function holdNextTickShape(): void {
  process.nextTick(() => {
    heldTickEntry ??= executionAsyncResource();
  });
}
