import { setWithin } from './bounded-map.js';

export interface RateLimit {
  readonly burst: number;
  readonly perSecond: number;
}

/** Past it the least recently seen is forgotten. */
const MAX_TRACKED = 100_000;

interface Bucket {
  tokens: number;
  at: number;
}

export class Buckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly limit: RateLimit,
    private readonly maxTracked = MAX_TRACKED,
  ) {}

  /** 0 when a request may go ahead (and is counted), else the milliseconds until one may. */
  take(key: string, now: number): number {
    const bucket = this.refilled(key, now);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - bucket.tokens) / this.limit.perSecond) * 1000);
  }

  giveBack(key: string, now: number): void {
    const bucket = this.refilled(key, now);
    bucket.tokens = Math.min(this.limit.burst, bucket.tokens + 1);
  }

  private refilled(key: string, now: number): Bucket {
    const known = this.buckets.get(key);
    const bucket = known ?? { tokens: this.limit.burst, at: now };
    bucket.tokens = Math.min(this.limit.burst, bucket.tokens + (Math.max(0, now - bucket.at) / 1000) * this.limit.perSecond);
    bucket.at = now;
    // Re-inserted so that the map's first entry is the least recently seen one.
    this.buckets.delete(key);
    setWithin(this.buckets, key, bucket, this.maxTracked);
    return bucket;
  }
}

/** An IPv6 address counts by its /64, one subscriber's block (RFC 6177): no fresh bucket by stepping within it. */
export function addressBucket(address: string): string {
  if (!address.includes(':')) return address;
  const [head = '', tail] = address.toLowerCase().split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? 0 : Math.max(0, 8 - headGroups.length - tailGroups.length);
  const groups = [...headGroups, ...Array<string>(zeros).fill('0'), ...tailGroups];
  return `${groups.slice(0, 4).join(':')}::/64`;
}

