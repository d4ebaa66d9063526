/**
 * Runs a batch write every so often, one at a time, and once more on stop (SIGTERM): what the
 * recorders that keep the request path off the database (last-used times, refusal counts) share.
 */
export class PeriodicFlush {
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    seconds: number,
    private readonly write: () => Promise<void>,
  ) {
    this.timer = setInterval(() => void this.flush(), seconds * 1000);
    this.timer.unref();
  }

  /** A write after the one under way, never beside it. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(this.write);
    return this.flushing;
  }

  /** The last write. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
