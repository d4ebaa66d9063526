/**
 * Work on the event loop cut into slices of at most SLICE_MS, letting the checks that queued meanwhile
 * run between them: a check waits for one slice at most, however large the installation and however
 * busy the machine (a count of rows per slice would take longer on a slower or busier one).
 */
const SLICE_MS = 2;

export class Slices {
  private startedAt = performance.now();

  /** True once this slice has run its time: the caller then awaits next(). */
  get over(): boolean {
    return performance.now() - this.startedAt >= SLICE_MS;
  }

  async next(): Promise<void> {
    await new Promise((resolveYield) => setImmediate(resolveYield));
    this.startedAt = performance.now();
  }
}
