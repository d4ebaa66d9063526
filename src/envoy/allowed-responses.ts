import type { Allowed } from '../decision/types.js';
import { toCheckResponse, type AllowedResponsePolicy } from './check-response.js';
import type { CheckResponseMessage } from './messages.js';
import { EncodedResponses } from './encoded-responses.js';
import type { EncodedCheckResponse } from './proto.js';

/** A few MiB of 100 to 300-byte entries; beyond it a check costs one more encoding, nothing else. */
const ALLOWED_RESPONSES_MAX = 10_000;

/** A partner's requests repeat the last response, which then costs no key. */
interface LatestAllowed {
  readonly method: Allowed['method'];
  readonly siteId: string;
  readonly credential: string;
  readonly response: EncodedCheckResponse;
}

/** Made of site, credential and policy alone, an entry stays right (a revocation makes a denial, never kept here). */
export class AllowedResponses {
  private readonly encoded: EncodedResponses;
  private latest: LatestAllowed | undefined;

  constructor(
    private policy: AllowedResponsePolicy,
    private readonly encode: (response: CheckResponseMessage) => Buffer,
    maxEntries: number = ALLOWED_RESPONSES_MAX,
  ) {
    this.encoded = new EncodedResponses(maxEntries);
  }

  /** A policy other than the kept encodings' (the sunset policy changed) drops them all. */
  response(decision: Allowed, policy: AllowedResponsePolicy = this.policy): EncodedCheckResponse {
    if (policy !== this.policy) {
      this.encoded.clear();
      this.latest = undefined;
      this.policy = policy;
    }
    const { method, siteId } = decision;
    const credential = method === 'api_key' ? decision.keyId : decision.clientId;
    const latest = this.latest;
    if (latest !== undefined && latest.method === method && latest.siteId === siteId && latest.credential === credential) return latest.response;
    // Site and key ids are decimal digits, so a key's entry has one colon; a client id may hold any
    // character but follows the site id and a space, which no key's entry has.
    const entry = method === 'api_key' ? `${siteId}:${credential}` : `${siteId} ${credential}`;
    const response = this.encoded.response(entry, () => this.encode(toCheckResponse(decision, this.policy)));
    this.latest = { method, siteId, credential, response };
    return response;
  }

  get size(): number {
    return this.encoded.size;
  }
}
