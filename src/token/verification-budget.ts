import { parseClientIp } from '../allowlist/client-ip.js';
import { addressBucket, Buckets, type RateLimit } from '../common/token-buckets.js';

export interface VerificationLimits {
  readonly perAddress: RateLimit;
  readonly overall: RateLimit;
}

// A signature check costs ~300 µs: 50 new tokens a second from one address is a fleet's worth;
// 1,000 a second in all holds a process to a third of a core.
export const DEFAULT_VERIFICATION_LIMITS: VerificationLimits = Object.freeze({
  perAddress: { burst: 100, perSecond: 50 },
  overall: { burst: 1_000, perSecond: 1_000 },
});

/** Per source address (IPv6 by its /64) and in all: a forged-token flood spends its own address's budget only. */
export class VerificationBudget {
  private readonly addresses: Buckets;
  private readonly overall: Buckets;

  constructor(limits: VerificationLimits = DEFAULT_VERIFICATION_LIMITS) {
    this.addresses = new Buckets(limits.perAddress);
    this.overall = new Buckets(limits.overall);
  }

  /** Whether a check of a new token from `source` (the client address) may start now; counted when it may. */
  take(source: string | undefined, now: number): boolean {
    const parsed = source === undefined ? undefined : parseClientIp(source);
    const address = parsed === undefined ? 'unknown' : addressBucket(parsed.address);
    if (this.addresses.take(address, now) > 0) return false;
    if (this.overall.take('all', now) > 0) {
      this.addresses.giveBack(address, now);
      return false;
    }
    return true;
  }
}
