/** Opens at most once per interval: for log lines a failing dependency would repeat on every retry. */
export class RateLimit {
  private lastOpenedAt = -Infinity;

  constructor(
    private readonly intervalMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  open(): boolean {
    const now = this.clock();
    if (now - this.lastOpenedAt < this.intervalMs) return false;
    this.lastOpenedAt = now;
    return true;
  }

  /** Since the last reset: "did we report a failure that recovery should close?" */
  get opened(): boolean {
    return this.lastOpenedAt !== -Infinity;
  }

  reset(): void {
    this.lastOpenedAt = -Infinity;
  }
}
