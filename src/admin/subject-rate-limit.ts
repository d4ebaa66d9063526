import { Buckets } from '../common/token-buckets.js';

/** A token bucket per person, in whole seconds (for Retry-After); beyond `maxSubjects` the least recent goes. */
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

  /** 0, or the seconds to wait. */
  take(subject: string): number {
    const waitMs = this.buckets.take(subject, this.now());
    return waitMs === 0 ? 0 : Math.max(1, Math.ceil(waitMs / 1000));
  }
}
