import { setWithin } from '../common/bounded-map.js';

/**
 * The token endpoint's limits, decided before oidc-provider spends anything on a request: requests
 * per source address, requests per client, and failed client authentications per address. A bad
 * `private_key_jwt` assertion costs a signature check; an address may fail only `failedPerAddress`
 * times (a reservation is taken before the check and given back when the client authenticated), so a
 * flood of bad assertions is refused unverified while other addresses' clients still get tokens.
 * Kept in memory per process: each replica bounds its own share of the work.
 */

export interface RateLimit {
  /** Requests allowed at once after a quiet spell. */
  readonly burst: number;
  /** Requests allowed per second after that. */
  readonly perSecond: number;
}

export interface TokenEndpointLimits {
  readonly perAddress: RateLimit;
  readonly perClient: RateLimit;
  readonly failedPerAddress: RateLimit;
}

/**
 * A partner reuses its token until shortly before it expires (ISSUER_TOKEN_TTL_SECONDS): one request
 * in minutes. These limits leave room for a fleet of a partner's machines behind one address, and for
 * a few mistakes while a partner sets up, and no room for guessing.
 */
export const DEFAULT_TOKEN_ENDPOINT_LIMITS: TokenEndpointLimits = Object.freeze({
  perAddress: { burst: 60, perSecond: 10 },
  perClient: { burst: 20, perSecond: 2 },
  failedPerAddress: { burst: 10, perSecond: 0.2 },
});

/** Addresses and clients remembered; past it the least recently seen is forgotten. */
const MAX_TRACKED = 100_000;

interface Bucket {
  tokens: number;
  at: number;
}

/** Token buckets by key: `take` spends one or says how long until one is there. */
class Buckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly limit: RateLimit) {}

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
    setWithin(this.buckets, key, bucket, MAX_TRACKED);
    return bucket;
  }
}

/**
 * The key an address is counted under: an IPv4 address itself, an IPv6 address by its /64, the block
 * one subscriber is given (RFC 6177), so that a client cannot step to a fresh bucket within it.
 */
export function addressBucket(address: string): string {
  if (!address.includes(':')) return address;
  const [head = '', tail] = address.toLowerCase().split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? 0 : Math.max(0, 8 - headGroups.length - tailGroups.length);
  const groups = [...headGroups, ...Array<string>(zeros).fill('0'), ...tailGroups];
  return `${groups.slice(0, 4).join(':')}::/64`;
}

export type Admission =
  | { readonly admitted: true; readonly settle: (authenticated: boolean) => void }
  | { readonly admitted: false; readonly retryAfterSeconds: number; readonly reason: string };

export class TokenEndpointGuard {
  private readonly failures: Buckets;
  private readonly addresses: Buckets;
  private readonly clients: Buckets;

  constructor(limits: TokenEndpointLimits = DEFAULT_TOKEN_ENDPOINT_LIMITS) {
    this.failures = new Buckets(limits.failedPerAddress);
    this.addresses = new Buckets(limits.perAddress);
    this.clients = new Buckets(limits.perClient);
  }

  /**
   * Whether a token request from `address` naming `clientId` (as it says, unverified) may reach the
   * provider. When admitted, `settle` says whether the client authenticated, once the answer is known.
   */
  admit(source: string, clientId: string | undefined, now: number): Admission {
    const address = addressBucket(source);
    const refuse = (waitMs: number, reason: string): Admission => ({ admitted: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)), reason });
    const failureWait = this.failures.take(address, now);
    if (failureWait > 0) return refuse(failureWait, 'too many failed client authentications from this address');
    const addressWait = this.addresses.take(address, now);
    if (addressWait > 0) {
      this.failures.giveBack(address, now);
      return refuse(addressWait, 'too many token requests from this address');
    }
    const clientWait = clientId === undefined ? 0 : this.clients.take(clientId, now);
    if (clientWait > 0) {
      this.failures.giveBack(address, now);
      return refuse(clientWait, 'too many token requests for this client');
    }
    let settled = false;
    return {
      admitted: true,
      settle: (authenticated) => {
        if (settled) return;
        settled = true;
        if (authenticated) this.failures.giveBack(address, Date.now());
        // A request that failed to authenticate was not the client's: it does not spend the client's
        // budget, or a stranger naming the client could lock it out. The address's failures bound it.
        else if (clientId !== undefined) this.clients.giveBack(clientId, Date.now());
      },
    };
  }
}
