import type { Allowed } from '../decision/types.js';
import { toCheckResponse, type AllowedResponsePolicy } from './check-response.js';
import type { CheckResponseMessage } from './messages.js';
import { EncodedResponses } from './encoded-responses.js';
import type { EncodedCheckResponse } from './proto.js';

/**
 * Encoded allowed responses kept at most. An entry is the response (about 100 to 300 bytes with the
 * sunset headers) in its own memory: a few MiB in all. Enough for every key in steady use on any
 * replica we know of; beyond it a check costs one more encoding, nothing else.
 */
export const ALLOWED_RESPONSES_MAX = 10_000;

/** The last response given, and what it was for: a partner's requests repeat it, and then cost no key. */
interface LatestAllowed {
  readonly method: Allowed['method'];
  readonly siteId: string;
  /** The key id or the token's client id. */
  readonly credential: string;
  readonly response: EncodedCheckResponse;
}

/**
 * Allowed CheckResponses, encoded once per site and key or token client. An allowed response is made
 * of the site id, the method, the key id or client id and the policy fixed at start-up, nothing else (see toCheckResponse), so a kept encoding
 * is the encoding of that response whatever the credential snapshot says later: a revoked key, a
 * changed allowlist or a disabled site make the decision a denial, which is never taken from here.
 * Building the response with its Struct metadata and encoding it cost more than the decision itself.
 *
 * Only allowed checks add entries, so only holders of a valid key and address can grow it, and at
 * most ALLOWED_RESPONSES_MAX of them: when full, the oldest entry makes room.
 */
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

  /**
   * The encoded allowed response for the site and its key or token client, under `policy` if given:
   * a policy that is not the one the kept encodings were made with (the sunset policy changed) drops
   * them all.
   */
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
    // toCheckResponse reads the site, the method and the key or client of the decision, nothing else.
    const response = this.encoded.response(entry, () => this.encode(toCheckResponse(decision, this.policy)));
    this.latest = { method, siteId, credential, response };
    return response;
  }

  /** Entries kept now. */
  get size(): number {
    return this.encoded.size;
  }
}
