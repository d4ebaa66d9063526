import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import { NO_TOKEN_TYPE, normalizedTokenType, type AccessTokenRules } from '../config.js';
import type { TokenRule } from '../decision/types.js';
import type { KeySource } from './issuer-keys.js';

/** Longer is no access token any issuer mints: refused unread. */
export const TOKEN_MAX_CHARS = 16_384;

export type AccessTokenRule = Exclude<TokenRule, 'revoked' | 'tokens-disabled' | 'keys-unavailable' | 'too-old'>;

export type AccessTokenOutcome = { readonly valid: true; readonly payload: JWTPayload } | { readonly valid: false; readonly rule: AccessTokenRule };

const refuse = (rule: AccessTokenRule): AccessTokenOutcome => ({ valid: false, rule });

/** Written as !(… <=) so that an exp of 1e400, read as Infinity, is beyond the maximum age, not valid for ever. */
export function beyondMaxAge(issuedAt: number, expiresAt: number, rules: AccessTokenRules, now: number): boolean {
  const bound = rules.maxAgeSeconds * 1000;
  return !(expiresAt - issuedAt <= bound) || !(now - issuedAt <= bound + rules.clockSkewSeconds * 1000);
}

const RULE_OF_JOSE_CODE: Readonly<Record<string, AccessTokenRule>> = {
  ERR_JWT_EXPIRED: 'expired',
  ERR_JOSE_ALG_NOT_ALLOWED: 'algorithm',
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: 'signature',
  ERR_JWKS_NO_MATCHING_KEY: 'unknown-key',
  ERR_JWKS_MULTIPLE_MATCHING_KEYS: 'unknown-key',
};

function ruleOfJoseError(error: unknown): AccessTokenRule {
  if (!(error instanceof errors.JOSEError)) throw error;
  if (error.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') {
    const { claim, reason } = error as errors.JWTClaimValidationFailed;
    if (reason === 'missing') return 'claims';
    if (claim === 'iss') return 'issuer';
    if (claim === 'aud') return 'audience';
    return (claim === 'nbf' || claim === 'iat') && reason === 'check_failed' ? 'not-yet-valid' : 'claims';
  }
  // ERR_JWS_INVALID, ERR_JWT_INVALID, ERR_JOSE_NOT_SUPPORTED, a key of the wrong type, …
  return RULE_OF_JOSE_CODE[error.code] ?? 'malformed';
}

/** The typ header as the accepted types list it; '' (never listed) when it is not text or says "none". */
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

/** Chooses the message only (a staff token is told it is another issuer's): a token naming ours is verified in full. */
function isFromAnotherIssuer(token: string, issuer: string): boolean {
  let iss: unknown;
  try {
    iss = decodeJwt(token).iss;
  } catch {
    return false;
  }
  return typeof iss === 'string' && iss !== issuer;
}

/** Checked in the order a caller would fix it: shape, alg, typ, kid, signature, iss, aud, exp, nbf, claims, iat. */
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
