import { createHash } from 'node:crypto';
import { decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import { normalizedTokenType, type TokenSettings } from '../config.js';
import type { AccessTokenClaims, TokenRule, TokenVerdict } from '../decision/types.js';
import type { KeySource } from './issuer-keys.js';

/** Verified tokens kept at most; a partner sends the same token for many requests until it expires. */
export const VERIFIED_TOKENS_MAX = 10_000;
/** Longer is no access token any issuer mints: refused unread. */
export const TOKEN_MAX_CHARS = 16_384;
const CLIENT_ID_MAX_CHARS = 255;

type Refusal = Extract<TokenVerdict, { valid: false }>;
const refuse = (rule: Refusal['rule']): Refusal => ({ valid: false, rule });

/** What jose's error codes say, as the rule a partner can act on. */
function ruleOfJoseError(error: unknown): Refusal['rule'] {
  if (!(error instanceof errors.JOSEError)) throw error;
  switch (error.code) {
    case 'ERR_JWT_EXPIRED':
      return 'expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const { claim, reason } = error as errors.JWTClaimValidationFailed;
      if (reason === 'missing') return 'claims';
      if (claim === 'iss') return 'issuer';
      if (claim === 'aud') return 'audience';
      if (claim === 'nbf' || claim === 'iat') return reason === 'check_failed' ? 'not-yet-valid' : 'claims';
      return 'claims';
    }
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'algorithm';
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'signature';
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return 'unknown-key';
    default:
      // ERR_JWS_INVALID, ERR_JWT_INVALID, ERR_JOSE_NOT_SUPPORTED, a key of the wrong type, …
      return 'malformed';
  }
}

function claimsOf(payload: JWTPayload): AccessTokenClaims | undefined {
  const clientId = payload['client_id'];
  if (typeof clientId !== 'string' || clientId === '' || clientId.length > CLIENT_ID_MAX_CHARS) return undefined;
  if (typeof payload.iat !== 'number' || typeof payload.exp !== 'number') return undefined;
  return { clientId, issuedAt: payload.iat * 1000, expiresAt: payload.exp * 1000 };
}

/**
 * Verifies Bearer access tokens (RFC 9068) as the issue of this method fixes them, in the order a
 * partner would fix them: the JWS shape, its alg against TOKEN_ALGORITHMS, typ (at+jwt), the kid
 * against the issuer's JWKS, the signature, iss, aud, exp and nbf within TOKEN_CLOCK_SKEW_SECONDS, and
 * the claims the decision reads (client_id, iat). jose does every cryptographic step.
 *
 * A token that verified is kept by the SHA-256 of its text, never the text, until its exp, so that
 * the same token costs a hash, not a signature check, on each later request. What a kept token is
 * allowed to do is decided each time against the snapshot (its client's registration, the site's
 * revocation cut-off), and forget() drops one the decision found revoked or unregistered.
 */
export class TokenVerifier {
  private readonly verified = new Map<string, AccessTokenClaims>();
  /** Verifications under way, so that a burst of one new token verifies it once. */
  private readonly inFlight = new Map<string, Promise<TokenVerdict>>();
  private readonly skewMs: number;

  constructor(
    private readonly settings: TokenSettings,
    private readonly keys: KeySource,
    private readonly maxEntries: number = VERIFIED_TOKENS_MAX,
  ) {
    this.skewMs = settings.clockSkewSeconds * 1000;
  }

  /**
   * The verdict on a token at `now` (epoch ms): at once for a token verified before, else once
   * verified; undefined while no key set has been fetched (the check is then not decided at all).
   */
  verify(token: string, now: number): TokenVerdict | Promise<TokenVerdict> | undefined {
    if (token.length === 0 || token.length > TOKEN_MAX_CHARS) return refuse('malformed');
    const id = tokenId(token);
    const kept = this.verified.get(id);
    if (kept !== undefined) {
      if (now < kept.expiresAt + this.skewMs) return { valid: true, claims: kept };
      this.verified.delete(id);
      return refuse('expired');
    }
    if (!this.keys.loaded) return undefined;
    const running = this.inFlight.get(id);
    if (running !== undefined) return running;
    const verdict = this.verifyNew(token, now)
      .then((result) => {
        if (result.valid) this.keep(id, result.claims);
        return result;
      })
      .finally(() => this.inFlight.delete(id));
    this.inFlight.set(id, verdict);
    return verdict;
  }

  /** Drops a kept token: the decision found its client unregistered or the token revoked. */
  forget(token: string): void {
    this.verified.delete(tokenId(token));
  }

  /** Tokens kept now. */
  get size(): number {
    return this.verified.size;
  }

  private keep(id: string, claims: AccessTokenClaims): void {
    if (this.verified.size >= this.maxEntries) {
      const oldest = this.verified.keys().next();
      if (!oldest.done) this.verified.delete(oldest.value);
    }
    this.verified.set(id, claims);
  }

  private async verifyNew(token: string, now: number): Promise<TokenVerdict> {
    const headerRule = this.headerRule(token);
    if (headerRule !== undefined) return refuse(headerRule);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keys.getKey, {
        issuer: this.settings.issuer,
        audience: this.settings.audience,
        algorithms: [...this.settings.algorithms],
        clockTolerance: this.settings.clockSkewSeconds,
        requiredClaims: ['exp', 'iat', 'client_id'],
        currentDate: new Date(now),
      }));
    } catch (error) {
      return refuse(ruleOfJoseError(error));
    }
    const claims = claimsOf(payload);
    if (claims === undefined) return refuse('claims');
    // jose reads iat only with maxTokenAge: a token issued in the future is not valid yet either.
    if (claims.issuedAt > now + this.skewMs) return refuse('not-yet-valid');
    return { valid: true, claims };
  }

  /** What the protected header alone refuses, before any key is looked up. */
  private headerRule(token: string): Exclude<TokenRule, 'revoked'> | undefined {
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      return 'malformed';
    }
    if (token.split('.').length !== 3) return 'malformed';
    if (typeof header.alg !== 'string' || !this.settings.algorithms.includes(header.alg)) return 'algorithm';
    if (typeof header.typ !== 'string' || !this.settings.types.includes(normalizedTokenType(header.typ))) return 'type';
    if (typeof header.kid !== 'string' || header.kid === '') return 'unknown-key';
    return undefined;
  }
}

/** What a kept token is known by: its hash, so that no token sits in memory after its request. */
function tokenId(token: string): string {
  return createHash('sha256').update(token).digest('base64');
}
