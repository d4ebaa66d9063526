/**
 * A gate that opens at most once per interval: for log lines that a failing dependency would
 * otherwise repeat on every retry. `reset()` lets the next call through, e.g. after a recovery.
 */
export class RateLimit {
  private lastOpenedAt = -Infinity;

  constructor(
    private readonly intervalMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** True when the interval has passed since it last opened; opening starts a new interval. */
  open(): boolean {
    const now = this.clock();
    if (now - this.lastOpenedAt < this.intervalMs) return false;
    this.lastOpenedAt = now;
    return true;
  }

  /** Whether it has opened since the last reset: "did we report a failure that recovery should close?" */
  get opened(): boolean {
    return this.lastOpenedAt !== -Infinity;
  }

  reset(): void {
    this.lastOpenedAt = -Infinity;
  }
}
