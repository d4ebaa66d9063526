import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import { NO_TOKEN_TYPE, normalizedTokenType, type AccessTokenRules } from '../config.js';
import type { TokenRule } from '../decision/types.js';
import type { KeySource } from './issuer-keys.js';

/** Longer is no access token any issuer mints: refused unread. */
export const TOKEN_MAX_CHARS = 16_384;

/** Why a token was refused, as a partner (error 106) or a person on the admin port (401) is told. */
export type AccessTokenRule = Exclude<TokenRule, 'revoked' | 'tokens-disabled' | 'keys-unavailable' | 'too-old'>;

export type AccessTokenOutcome = { readonly valid: true; readonly payload: JWTPayload } | { readonly valid: false; readonly rule: AccessTokenRule };

const refuse = (rule: AccessTokenRule): AccessTokenOutcome => ({ valid: false, rule });

/**
 * Whether a token is older, or lives longer, than the rules' maximum age: by iat (within the clock
 * skew), and by exp - iat. An exp of 1e400 reads as Infinity, and a token issued years ago with an
 * exp ahead would otherwise count for as long as exp says. A token within the bound has
 * exp <= iat + bound, so none is kept verified beyond it either. Instants in epoch ms.
 */
export function beyondMaxAge(issuedAt: number, expiresAt: number, rules: AccessTokenRules, now: number): boolean {
  const bound = rules.maxAgeSeconds * 1000;
  return !(expiresAt - issuedAt <= bound) || !(now - issuedAt <= bound + rules.clockSkewSeconds * 1000);
}

/** What jose's error codes say, as the rule a caller can act on. */
function ruleOfJoseError(error: unknown): AccessTokenRule {
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

/** The typ header as the accepted types list it: NO_TOKEN_TYPE when there is none; '' (never listed) when it is not text or says "none". */
function typeOf(typ: unknown): string {
  if (typ === undefined) return NO_TOKEN_TYPE;
  if (typeof typ !== 'string') return '';
  const type = normalizedTokenType(typ);
  return type === NO_TOKEN_TYPE ? '' : type;
}

/** What the protected header alone refuses, before any key is looked up. */
export function headerRule(token: string, rules: AccessTokenRules): AccessTokenRule | undefined {
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return 'malformed';
  }
  if (token.split('.').length !== 3) return 'malformed';
  if (typeof header.alg !== 'string' || !rules.algorithms.includes(header.alg)) return 'algorithm';
  if (!rules.types.includes(typeOf(header.typ))) return 'type';
  if (isFromAnotherIssuer(token, rules.issuer)) return 'issuer';
  if (typeof header.kid !== 'string' || header.kid === '') return 'unknown-key';
  return undefined;
}

/**
 * Whether the token's iss, read before its signature is checked, names another issuer: a token of
 * another authorization server (a staff token, say) is told so, not that its kid is unknown here. The
 * unverified claim chooses the message and nothing else: a token naming our issuer is verified in
 * full, and one naming another could never have verified.
 */
function isFromAnotherIssuer(token: string, issuer: string): boolean {
  let iss: unknown;
  try {
    iss = decodeJwt(token).iss;
  } catch {
    return false;
  }
  return typeof iss === 'string' && iss !== issuer;
}

/**
 * One RFC 9068 JWT access token checked in the order a caller would fix it: the JWS shape, its alg
 * against the allow-list (never none or HMAC: config.ts refuses them), typ (at+jwt, or the types
 * configured; a token without typ only where NO_TOKEN_TYPE is), an iss of another issuer (read
 * unverified, for the message only), the kid against
 * the issuer's keys, the signature, iss, aud, exp and nbf within the clock skew, the claims the caller
 * needs, and iat not in the future. jose does every cryptographic step. Partner tokens
 * (token-verifier.ts) and the admin port's (admin/admin-token.ts) both go through here.
 */
export async function verifyAccessToken(
  token: string,
  keys: KeySource,
  rules: AccessTokenRules,
  now: number,
  requiredClaims: readonly string[],
): Promise<AccessTokenOutcome> {
  if (token.length === 0 || token.length > TOKEN_MAX_CHARS) return refuse('malformed');
  const fromHeader = headerRule(token, rules);
  if (fromHeader !== undefined) return refuse(fromHeader);
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, keys.getKey, {
      issuer: rules.issuer,
      audience: rules.audience,
      algorithms: [...rules.algorithms],
      clockTolerance: rules.clockSkewSeconds,
      requiredClaims: ['exp', 'iat', ...requiredClaims],
      currentDate: new Date(now),
    }));
  } catch (error) {
    return refuse(ruleOfJoseError(error));
  }
  if (typeof payload.iat !== 'number' || typeof payload.exp !== 'number') return refuse('claims');
  // jose reads iat only with maxTokenAge: a token issued in the future is not valid yet either.
  if (payload.iat * 1000 > now + rules.clockSkewSeconds * 1000) return refuse('not-yet-valid');
  return { valid: true, payload };
}
