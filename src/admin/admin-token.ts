import type { IncomingMessage } from 'node:http';
import { decodeJwt, type JWTPayload } from 'jose';
import { NO_TOKEN_TYPE, type AdminSettings } from '../config.js';
import { beyondMaxAge, headerRule, TOKEN_MAX_CHARS, verifyAccessToken, type AccessTokenRule } from '../token/access-token.js';
import type { KeySource } from '../token/issuer-keys.js';
import { setWithin } from '../common/bounded-map.js';
import { sha256 } from '../common/sha256.js';
import { rolesOf, type AdminPrincipal, type AuthOutcome, type RequestAuthenticator } from './principal.js';
import { requestSource } from './request-source.js';
import { SubjectRateLimit } from './subject-rate-limit.js';

const SUBJECT_MAX_CHARS = 255;
const EMAIL_MAX_CHARS = 320;
const NAME_MAX_CHARS = 200;
// Shown in a console and written to the audit trail: no control or direction characters.
const PRINTABLE = /^[^\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+$/;
// An address alone (RFC 5322's addr-spec without quoted or commented parts): no space, bracket or
// comment that could make it read as a name with a subject beside it.
const ADDRESS_ALONE = /^[^\s@"(),:;<>[\]\\]+@[^\s@"(),:;<>[\]\\]+$/;

type AdminTokenRule = AccessTokenRule | 'too-old';

/** What a person is told about a refused token (RFC 6750 §3.1 error_description: no secrets, no token). */
const RULE_DESCRIPTIONS: Readonly<Record<Exclude<AdminTokenRule, 'type'>, string>> = {
  malformed: 'the access token is not a JWT',
  algorithm: 'the access token is signed with an algorithm that is not accepted',
  'unknown-key': "the access token is signed with a key the provider does not publish",
  signature: 'the access token signature does not verify',
  issuer: 'the access token is from another issuer than ADMIN_ISSUER',
  audience: 'the access token is for another audience than ADMIN_AUDIENCE',
  expired: 'the access token has expired; sign in again',
  'not-yet-valid': 'the access token is not valid yet',
  'too-old': 'the access token was issued too long ago, or is valid for longer than ADMIN_TOKEN_MAX_AGE_SECONDS; sign in again',
  claims: 'the access token lacks a claim this API needs (sub, exp, iat)',
};

function ruleDescription(rule: AdminTokenRule, types: readonly string[]): string {
  if (rule !== 'type') return RULE_DESCRIPTIONS[rule];
  const accepted = types.map((type) => (type === NO_TOKEN_TYPE ? 'none' : type)).join(', ');
  return `the access token is not an access token of a type ADMIN_TOKEN_TYPES accepts (typ ${accepted})`;
}

// Claims only an ID token carries (OIDC Core §3.3.2.11; Keycloak writes typ "ID"): its aud may pass (Entra ID uses one
// id for console and API) and typ JWT cannot tell. Not nonce: Keycloak before 25 wrote it into access tokens.
const ID_TOKEN_CLAIMS = ['at_hash', 'c_hash', 's_hash'] as const;

function isIdToken(payload: JWTPayload): boolean {
  return ID_TOKEN_CLAIMS.some((claim) => Object.hasOwn(payload, claim)) || payload['typ'] === 'ID';
}

const invalidToken = (description: string): AuthOutcome => ({ ok: false, status: 401, error: 'invalid_token', description });

/** Signature checks of new tokens, per source address and in all: the primary also answers checks (WORKERS=1). */
export const NEW_TOKEN_CHECKS = Object.freeze({
  perSource: Object.freeze({ burst: 20, perSecond: 10 }),
  all: Object.freeze({ burst: 60, perSecond: 30 }),
});
/** Verified tokens kept by SHA-256 until they expire (within ADMIN_TOKEN_MAX_AGE_SECONDS of iat). */
const VERIFIED_ADMIN_TOKENS_MAX = 1_000;

// What the token says of itself, unsigned, that no token of ADMIN_ISSUER for this API could say: refused before any
// budget is spent. An unknown kid is left to the full check, which may fetch the keys again.
function unverifiedRule(token: string, settings: AdminSettings, now: number): AdminTokenRule | undefined {
  if (token.length === 0 || token.length > TOKEN_MAX_CHARS) return 'malformed';
  const fromHeader = headerRule(token, settings);
  if (fromHeader !== undefined) return fromHeader;
  let payload: JWTPayload;
  try {
    payload = decodeJwt(token);
  } catch {
    return 'malformed';
  }
  if (payload.iss !== settings.issuer) return 'issuer';
  const audiences: unknown[] = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (!audiences.includes(settings.audience)) return 'audience';
  if (typeof payload.exp !== 'number') return 'claims';
  if (payload.exp * 1000 <= now - settings.clockSkewSeconds * 1000) return 'expired';
  if (typeof payload.iat !== 'number') return 'claims';
  if (beyondMaxAge(payload.iat * 1000, payload.exp * 1000, settings, now)) return 'too-old';
  return undefined;
}

function shortText(value: unknown, maxChars: number): string | undefined {
  return typeof value === 'string' && value !== '' && value.length <= maxChars && PRINTABLE.test(value) ? value : undefined;
}

// The top-level claim of that name first (https://corp.example/roles has dots of its own), else the dotted path
// through nested objects (Keycloak's resource_access.<client>.roles).
function rolesClaimValue(payload: JWTPayload, rolesClaim: string): unknown {
  if (Object.hasOwn(payload, rolesClaim)) return payload[rolesClaim];
  let value: unknown = payload;
  for (const member of rolesClaim.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, member)) return undefined;
    value = (value as Record<string, unknown>)[member];
  }
  return value;
}

function principalOf(payload: JWTPayload, rolesClaim: string): AdminPrincipal | undefined {
  const subject = shortText(payload.sub, SUBJECT_MAX_CHARS);
  if (subject === undefined) return undefined;
  // OpenID Connect Core §5.1: an e-mail is the person's only when email_verified is true.
  const claimedEmail = payload['email_verified'] === true ? shortText(payload['email'], EMAIL_MAX_CHARS) : undefined;
  const email = claimedEmail !== undefined && ADDRESS_ALONE.test(claimedEmail) ? claimedEmail : undefined;
  const name = shortText(payload['name'], NAME_MAX_CHARS);
  const claimed = rolesClaimValue(payload, rolesClaim);
  return {
    subject,
    ...(email === undefined ? {} : { email }),
    ...(name === undefined ? {} : { name }),
    roles: rolesOf(claimed),
    ...(claimed === undefined ? { rolesClaimMissing: rolesClaim } : {}),
  };
}

/** An admin token checked by the partner tokens' rules: one path for the Bearer header and the console's session. */
export class AdminTokenVerifier {
  private readonly verified = new Map<string, { readonly principal: AdminPrincipal; readonly until: number }>();
  /** The same token sent again during its check waits for the same answer, at no cost. */
  private readonly verifying = new Map<string, Promise<AuthOutcome>>();
  private readonly checksPerSource: SubjectRateLimit;
  private readonly checksInAll: SubjectRateLimit;

  constructor(
    private readonly settings: AdminSettings,
    private readonly keys: KeySource,
    private readonly now: () => number = Date.now,
  ) {
    this.checksPerSource = new SubjectRateLimit(NEW_TOKEN_CHECKS.perSource.burst, NEW_TOKEN_CHECKS.perSource.perSecond, 10_000, now);
    this.checksInAll = new SubjectRateLimit(NEW_TOKEN_CHECKS.all.burst, NEW_TOKEN_CHECKS.all.perSecond, 1, now);
  }

  /** `source`: the address that sent it (requestSource); none for the console's own token, counted in all only. */
  async verify(token: string, now: number = this.now(), source?: string): Promise<AuthOutcome> {
    if (!this.keys.loaded) return invalidToken("the provider's signing keys have not been fetched yet; try again in a few seconds");
    const id = sha256(token, 'base64url');
    const kept = this.verified.get(id);
    if (kept !== undefined && now < kept.until) return { ok: true, principal: kept.principal };
    this.verified.delete(id);
    const refused = unverifiedRule(token, this.settings, now);
    if (refused !== undefined) return invalidToken(ruleDescription(refused, this.settings.types));
    const underWay = this.verifying.get(id);
    if (underWay !== undefined) return underWay;
    const wait = source === undefined ? 0 : this.checksPerSource.take(source);
    const waitInAll = wait > 0 ? 0 : this.checksInAll.take('every caller');
    if (wait > 0 || waitInAll > 0) {
      const where = wait > 0 ? `from this address; try again in ${wait} s` : `at once on this port; try again in ${waitInAll} s`;
      return { ok: false, status: 429, error: 'temporarily_unavailable', description: `too many new access tokens ${where}` };
    }
    const check = this.check(token, id, now).finally(() => this.verifying.delete(id));
    this.verifying.set(id, check);
    return check;
  }

  private async check(token: string, id: string, now: number): Promise<AuthOutcome> {
    const outcome = await verifyAccessToken(token, this.keys, this.settings, now, ['sub']);
    if (!outcome.valid) return invalidToken(ruleDescription(outcome.rule, this.settings.types));
    if (isIdToken(outcome.payload)) return invalidToken('this is an ID token; send an access token for ADMIN_AUDIENCE');
    const issuedAt = (outcome.payload.iat ?? 0) * 1000;
    const expiresAt = (outcome.payload.exp ?? 0) * 1000;
    // unverifiedRule read these claims unsigned; the verdict rests on the signed ones.
    if (beyondMaxAge(issuedAt, expiresAt, this.settings, now)) return invalidToken(ruleDescription('too-old', this.settings.types));
    const principal = principalOf(outcome.payload, this.settings.rolesClaim);
    if (principal === undefined) return invalidToken('the access token has no usable sub claim');
    setWithin(this.verified, id, { principal, until: expiresAt + this.settings.clockSkewSeconds * 1000 }, VERIFIED_ADMIN_TOKENS_MAX);
    return { ok: true, principal };
  }
}

/** `Authorization: Bearer <token>` (RFC 6750 §2.1). */
export class BearerAuthenticator implements RequestAuthenticator {
  constructor(
    private readonly verifier: AdminTokenVerifier,
    private readonly xffTrustedHops: number,
  ) {}

  async authenticate(request: IncomingMessage): Promise<AuthOutcome | undefined> {
    const header = request.headers.authorization;
    if (header === undefined) return undefined;
    const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
    if (match === null) return { ok: false, status: 401, error: 'invalid_request', description: 'send the access token as Authorization: Bearer <token>' };
    return this.verifier.verify(match[1] ?? '', undefined, requestSource(request, this.xffTrustedHops));
  }
}
