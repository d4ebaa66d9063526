/**
 * Work that arrives during one turn of the event loop, handled together once the turn's I/O is done
 * (setImmediate, before the loop polls for more). Handled in a row, the work's code and data stay in
 * the processor's caches; handled piece by piece between other work, each piece finds them evicted.
 */
export class TurnBatch<T> {
  private pending: T[] = [];
  private scheduled = false;

  /** `handle` must not throw: it runs on its own, where nothing would catch what it throws. */
  constructor(private readonly handle: (items: readonly T[]) => void) {}

  add(item: T): void {
    this.pending.push(item);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const items = this.pending;
    this.pending = [];
    this.handle(items);
  };
}
