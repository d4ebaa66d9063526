/** A turn's work handled in a row after its I/O (setImmediate), while its code and data stay in the caches. */
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
