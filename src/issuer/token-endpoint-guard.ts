import { addressBucket, Buckets, type RateLimit } from '../common/token-buckets.js';

export interface TokenEndpointLimits {
  readonly perAddress: RateLimit;
  readonly perClient: RateLimit;
  readonly failedPerAddress: RateLimit;
}

// A partner reuses its token until shortly before it expires: room for a fleet behind one address and a few
// mistakes while setting up, none for guessing.
export const DEFAULT_TOKEN_ENDPOINT_LIMITS: TokenEndpointLimits = Object.freeze({
  perAddress: { burst: 60, perSecond: 10 },
  perClient: { burst: 20, perSecond: 2 },
  failedPerAddress: { burst: 10, perSecond: 0.2 },
});

export type Admission =
  | { readonly admitted: true; readonly settle: (authenticated: boolean) => void }
  | { readonly admitted: false; readonly retryAfterSeconds: number; readonly reason: string };

// Per replica. A bad private_key_jwt assertion costs a signature check: a failure is reserved before the check and
// given back when the client authenticated, so a flood of bad assertions is refused unverified.
export class TokenEndpointGuard {
  private readonly failures: Buckets;
  private readonly addresses: Buckets;
  private readonly clients: Buckets;

  constructor(limits: TokenEndpointLimits = DEFAULT_TOKEN_ENDPOINT_LIMITS) {
    this.failures = new Buckets(limits.failedPerAddress);
    this.addresses = new Buckets(limits.perAddress);
    this.clients = new Buckets(limits.perClient);
  }

  /** `clientId` as the request says, unverified; once admitted, `settle` says whether the client authenticated. */
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
