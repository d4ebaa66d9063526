import { Buckets } from '../common/token-buckets.js';

/**
 * A token bucket per person, answering in whole seconds (for Retry-After). Beyond `maxSubjects` the one
 * used least recently goes: a full bucket again, but it takes that many people to push one out.
 */
export class SubjectRateLimit {
  private readonly buckets: Buckets;

  constructor(
    burst: number,
    perSecond: number,
    maxSubjects = 10_000,
    private readonly now: () => number = Date.now,
  ) {
    this.buckets = new Buckets({ burst, perSecond }, maxSubjects);
  }

  /** 0 when the request may go ahead, else the seconds until it may. */
  take(subject: string): number {
    const waitMs = this.buckets.take(subject, this.now());
    return waitMs === 0 ? 0 : Math.max(1, Math.ceil(waitMs / 1000));
  }
}
