import { decodeJwt, decodeProtectedHeader, type JWTPayload } from 'jose';
import { setWithin } from '../common/bounded-map.js';
import { CLIENT_ID_MAX_CHARS } from '../common/client-id.js';
import { sha256 } from '../common/sha256.js';
import type { TokenSettings } from '../config.js';
import type { AccessTokenClaims, TokenClaimant, TokenVerdict, Undecided } from '../decision/types.js';
import { beyondMaxAge, TOKEN_MAX_CHARS, verifyAccessToken } from './access-token.js';
import type { KeySource } from './issuer-keys.js';
import { VerificationBudget } from './verification-budget.js';

/** Verified tokens kept at most; a partner sends the same token for many requests until it expires. */
export const VERIFIED_TOKENS_MAX = 10_000;

type Refusal = Extract<TokenVerdict, { valid: false }>;
export type TokenOutcome = TokenVerdict | Undecided;

const KID_PENDING: Undecided = Object.freeze({ undecided: 'unknown-kid-pending' });
const BUDGET_SPENT: Undecided = Object.freeze({ undecided: 'verification-budget' });

function namesKid(token: string): boolean {
  try {
    const { kid } = decodeProtectedHeader(token);
    return typeof kid === 'string' && kid !== '';
  } catch {
    return false;
  }
}

// RFC 6749 Appendix A.1: VSCHARs; bounded, since a 107 quotes it back to the partner and the logs record it.
const CLIENT_ID = new RegExp(`^[\\x20-\\x7e]{1,${CLIENT_ID_MAX_CHARS}}$`);

function clientIdOf(payload: JWTPayload): string | undefined {
  const clientId = payload['client_id'];
  return typeof clientId === 'string' && CLIENT_ID.test(clientId) ? clientId : undefined;
}

/** The rules a partner fixes by requesting the token for this API's resource. */
const FIXED_BY_RESOURCE: ReadonlySet<Refusal['rule']> = new Set(['malformed', 'audience']);

/** Rules that refuse a token only after its signature verified: its client_id is our issuer's word. */
const RULES_AFTER_SIGNATURE: ReadonlySet<Refusal['rule']> = new Set(['expired', 'not-yet-valid', 'audience', 'claims', 'too-old']);

/** The client a refused token names, read unverified, so that the refusal counts tell a partner from a stranger. */
function claimantOf(token: string, rule: Refusal['rule']): TokenClaimant | undefined {
  let clientId: string | undefined;
  try {
    clientId = clientIdOf(decodeJwt(token));
  } catch {
    return undefined;
  }
  return clientId === undefined ? undefined : { clientId, signed: RULES_AFTER_SIGNATURE.has(rule) };
}

// By hash, so that no token sits in memory after its request.
const tokenId = (token: string): string => sha256(token, 'base64');

/** A verified token is kept until its exp, so a repeat costs a hash; what it may do is decided each time. */
export class TokenVerifier {
  private readonly verified = new Map<string, AccessTokenClaims>();
  private readonly inFlight = new Map<string, Promise<TokenOutcome>>();
  /** Tokens whose kid the key set lacked, with the count of fetches started when each first arrived. */
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
   * Without a key set a new token is refused (tokens fail closed). An unknown kid stays undecided until a fetch started
   * after the token arrived succeeds, so made-up kids spending the cool-down never get the issuer's newest key refused.
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

  private unknownKid(id: string, arrivedAfter: number, refusal: Refusal): TokenOutcome {
    const fetches = this.keys.fetches;
    if (fetches === undefined) return refusal;
    const firstArrivedAfter = this.kidPending.get(id) ?? arrivedAfter;
    if (fetches.lastSucceeded > firstArrivedAfter) {
      this.kidPending.delete(id);
      return refusal;
    }
    // Bounded like the verified ones: a token forgotten here only waits for a later fetch.
    setWithin(this.kidPending, id, firstArrivedAfter, this.maxEntries);
    return KID_PENDING;
  }

  forget(token: string): void {
    this.verified.delete(tokenId(token));
  }

  get size(): number {
    return this.verified.size;
  }

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
    const { iat, exp } = outcome.payload;
    const clientId = clientIdOf(outcome.payload);
    if (clientId === undefined || typeof iat !== 'number' || typeof exp !== 'number') {
      return this.refused('claims', token);
    }
    const claims: AccessTokenClaims = { clientId, issuedAt: iat * 1000, expiresAt: exp * 1000 };
    return beyondMaxAge(claims.issuedAt, claims.expiresAt, this.settings, now) ? this.refused('too-old', token) : { valid: true, claims };
  }
}
