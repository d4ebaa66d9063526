import { decodeJwt, decodeProtectedHeader, type JWTPayload } from 'jose';
import { setWithin } from '../common/bounded-map.js';
import { sha256 } from '../common/sha256.js';
import type { TokenSettings } from '../config.js';
import type { AccessTokenClaims, TokenClaimant, TokenVerdict, Undecided } from '../decision/types.js';
import { beyondMaxAge, TOKEN_MAX_CHARS, verifyAccessToken } from './access-token.js';
import type { KeySource } from './issuer-keys.js';
import { VerificationBudget } from './verification-budget.js';
import { CLIENT_ID_MAX_CHARS } from '../common/client-id.js';

export { TOKEN_MAX_CHARS } from './access-token.js';

/** Verified tokens kept at most; a partner sends the same token for many requests until it expires. */
export const VERIFIED_TOKENS_MAX = 10_000;

type Refusal = Extract<TokenVerdict, { valid: false }>;
/** What verify() answers: a verdict, or none yet. */
export type TokenOutcome = TokenVerdict | Undecided;

const KID_PENDING: Undecided = Object.freeze({ undecided: 'unknown-kid-pending' });
const BUDGET_SPENT: Undecided = Object.freeze({ undecided: 'verification-budget' });

/** Whether the token's header names a kid, which the issuer's key set was searched for. */
function namesKid(token: string): boolean {
  try {
    const { kid } = decodeProtectedHeader(token);
    return typeof kid === 'string' && kid !== '';
  } catch {
    return false;
  }
}

/**
 * RFC 6749 Appendix A.1: a client_id is VSCHARs (printable ASCII); bounded, since a 107 quotes it
 * back to the partner and the logs record it.
 */
const CLIENT_ID = new RegExp(`^[\\x20-\\x7e]{1,${CLIENT_ID_MAX_CHARS}}$`);

/** The rules a partner fixes by requesting the token for this API's resource. */
const FIXED_BY_RESOURCE: ReadonlySet<Refusal['rule']> = new Set(['malformed', 'audience']);

/** Rules that refuse a token only after its signature verified: its client_id is our issuer's word. */
const RULES_AFTER_SIGNATURE: ReadonlySet<Refusal['rule']> = new Set(['expired', 'not-yet-valid', 'audience', 'claims', 'too-old']);

/**
 * The client a refused token names, read without trusting it, for the refusal counts: a partner whose
 * token expires is told apart from a stranger, and the count says which of the two it was.
 */
function claimantOf(token: string, rule: Refusal['rule']): TokenClaimant | undefined {
  let clientId: unknown;
  try {
    clientId = decodeJwt(token)['client_id'];
  } catch {
    return undefined;
  }
  if (typeof clientId !== 'string' || !CLIENT_ID.test(clientId)) return undefined;
  return { clientId, signed: RULES_AFTER_SIGNATURE.has(rule) };
}

function claimsOf(payload: JWTPayload): AccessTokenClaims | undefined {
  const clientId = payload['client_id'];
  if (typeof clientId !== 'string' || !CLIENT_ID.test(clientId)) return undefined;
  if (typeof payload.iat !== 'number' || typeof payload.exp !== 'number') return undefined;
  return { clientId, issuedAt: payload.iat * 1000, expiresAt: payload.exp * 1000 };
}

/**
 * Verifies partners' Bearer access tokens (RFC 9068) with the rules of access-token.ts, under
 * TOKEN_ALGORITHMS and TOKEN_CLOCK_SKEW_SECONDS, no older and no longer-lived than TOKEN_MAX_AGE_SECONDS, and reads the claims the decision needs (client_id, iat).
 *
 * A token that verified is kept by the SHA-256 of its text, never the text, until its exp, so that
 * the same token costs a hash, not a signature check, on each later request. What a kept token is
 * allowed to do is decided each time against the snapshot (its client's registration, the site's
 * revocation cut-off), and forget() drops one the decision found revoked or unregistered.
 */
export class TokenVerifier {
  private readonly verified = new Map<string, AccessTokenClaims>();
  /** Verifications under way, so that a burst of one new token verifies it once. */
  private readonly inFlight = new Map<string, Promise<TokenOutcome>>();
  /**
   * Tokens whose kid the key set lacked, by hash, with the fetches started when each first arrived:
   * one stays undecided until a fetch started after that succeeds (bounded like the verified ones;
   * a token forgotten here only waits for a later fetch).
   */
  private readonly kidPending = new Map<string, number>();
  private readonly skewMs: number;

  constructor(
    private readonly settings: TokenSettings,
    private readonly keys: KeySource,
    private readonly maxEntries: number = VERIFIED_TOKENS_MAX,
    private readonly budget: VerificationBudget = new VerificationBudget(),
  ) {
    this.skewMs = settings.clockSkewSeconds * 1000;
  }

  /**
   * The verdict on a token at `now` (epoch ms): at once for a token verified before, else once
   * verified. While no key set is held (the issuer unreachable since start, none stored), a token
   * not verified before is refused (keys-unavailable): API-key checks go on, tokens fail closed.
   * A token whose kid the set lacks is undecided (unknown-kid-pending) until a fetch of the issuer's
   * keys started after it first arrived has succeeded, and refused (unknown-key) only then: a flood
   * of made-up kids that spends the fetches' cool-down never has the issuer's newest key refused.
   * The signature checks of tokens not seen before are bounded per `source` (the client address) and
   * in all (verification-budget.ts); beyond them a new token is undecided (verification-budget).
   */
  verify(token: string, now: number, source?: string): TokenOutcome | Promise<TokenOutcome> {
    if (token.length === 0 || token.length > TOKEN_MAX_CHARS) return this.refused('malformed');
    const id = tokenId(token);
    const kept = this.verified.get(id);
    if (kept !== undefined) {
      if (now < kept.expiresAt + this.skewMs) return { valid: true, claims: kept };
      this.verified.delete(id);
      return { valid: false, rule: 'expired', claimant: { clientId: kept.clientId, signed: true } };
    }
    if (!this.keys.loaded) return this.refused('keys-unavailable', token);
    const running = this.inFlight.get(id);
    if (running !== undefined) return running;
    if (!this.budget.take(source, now)) return BUDGET_SPENT;
    const arrivedAfter = this.keys.fetches?.started ?? 0;
    const verdict = this.verifyNew(token, now)
      .then((result) => {
        if (result.valid) setWithin(this.verified, id, result.claims, this.maxEntries);
        else if (result.rule === 'unknown-key' && namesKid(token)) return this.unknownKid(id, arrivedAfter, result);
        return result;
      })
      .finally(() => this.inFlight.delete(id));
    this.inFlight.set(id, verdict);
    return verdict;
  }

  /** A token whose kid the set lacks: refused once a fetch started since it first arrived has succeeded, else undecided. */
  private unknownKid(id: string, arrivedAfter: number, refusal: Refusal): TokenOutcome {
    const fetches = this.keys.fetches;
    if (fetches === undefined) return refusal;
    const firstArrivedAfter = this.kidPending.get(id) ?? arrivedAfter;
    if (fetches.lastSucceeded > firstArrivedAfter) {
      this.kidPending.delete(id);
      return refusal;
    }
    setWithin(this.kidPending, id, firstArrivedAfter, this.maxEntries);
    return KID_PENDING;
  }

  /** Drops a kept token: the decision found its client unregistered or the token revoked. */
  forget(token: string): void {
    this.verified.delete(tokenId(token));
  }

  /** Tokens kept now. */
  get size(): number {
    return this.verified.size;
  }

  /** A refusal: the resource to request for the rules that asking for it fixes, and the client the token names. */
  private refused(rule: Refusal['rule'], token?: string): Refusal {
    const claimant = token === undefined ? undefined : claimantOf(token, rule);
    return {
      valid: false,
      rule,
      ...(FIXED_BY_RESOURCE.has(rule) && { resource: this.settings.audience }),
      ...(claimant !== undefined && { claimant }),
    };
  }

  private async verifyNew(token: string, now: number): Promise<TokenVerdict> {
    const outcome = await verifyAccessToken(token, this.keys, this.settings, now, ['client_id']);
    if (!outcome.valid) return this.refused(outcome.rule, token);
    const claims = claimsOf(outcome.payload);
    if (claims === undefined) return this.refused('claims', token);
    return beyondMaxAge(claims.issuedAt, claims.expiresAt, this.settings, now) ? this.refused('too-old', token) : { valid: true, claims };
  }
}

/** What a kept token is known by: its hash, so that no token sits in memory after its request. */
function tokenId(token: string): string {
  return sha256(token, 'base64');
}
