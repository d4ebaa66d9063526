const SLICE_MS = 2;

/** Work cut into slices of time, not of rows, so that a queued check waits for one slice at most on any machine. */
export class Slices {
  private startedAt = performance.now();

  /** The caller then awaits next(). */
  get over(): boolean {
    return performance.now() - this.startedAt >= SLICE_MS;
  }

  async next(): Promise<void> {
    await new Promise((resolveYield) => setImmediate(resolveYield));
    this.startedAt = performance.now();
  }
}
