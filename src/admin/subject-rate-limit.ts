import { setWithin } from '../common/bounded-map.js';

/**
 * A token bucket per person: `burst` requests at once, refilled at `perSecond`. The buckets are
 * bounded: beyond `maxSubjects` the one used least recently goes (a full bucket again, which costs
 * nothing real: it takes that many people to push one out).
 */
export class SubjectRateLimit {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly burst: number,
    private readonly perSecond: number,
    private readonly maxSubjects = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** 0 when the request may go ahead (and takes a token), else the seconds until it may. */
  take(subject: string): number {
    const now = this.now();
    const bucket = this.buckets.get(subject) ?? { tokens: this.burst, at: now };
    this.buckets.delete(subject);
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    setWithin(this.buckets, subject, bucket, this.maxSubjects);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.perSecond));
  }
}
