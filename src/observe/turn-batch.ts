/**
 * Events observed together once the event loop has done its I/O: the checks answered in one turn of
 * the loop (an HTTP/2 connection's burst of streams, often dozens) are observed one after another
 * once their answers are written, in the order they were answered. Run in a row, the observers' code
 * and data (metrics, recorders, the decision log) stay in the processor's caches; run between two
 * checks, each found them evicted by the transport's work and cost about twice as much.
 *
 * Nothing observed is lost or delayed past the turn: a /metrics scrape or a flush that comes after a
 * check is read in a later turn, and flush() observes what is pending at shutdown.
 */
export class TurnBatch<E> {
  private pending: E[] = [];
  private scheduled = false;

  constructor(
    /** `now` (epoch ms) is read once for the whole batch. */
    private readonly observe: (event: E, now: number) => void,
    /** An observer threw on this event; the others of the batch are still observed. */
    private readonly onError: (error: unknown, event: E) => void,
  ) {}

  readonly add = (event: E): void => {
    this.pending.push(event);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flush);
  };

  /** Observes every pending event now. */
  readonly flush = (): void => {
    this.scheduled = false;
    const events = this.pending;
    if (events.length === 0) return;
    this.pending = [];
    const now = Date.now();
    for (const event of events) {
      try {
        this.observe(event, now);
      } catch (error) {
        this.onError(error, event);
      }
    }
  };
}
