import type { IncomingMessage } from 'node:http';
import type { JWTPayload } from 'jose';
import type { AdminSettings } from '../config.js';
import { verifyAccessToken, type AccessTokenRule } from '../token/access-token.js';
import type { KeySource } from '../token/issuer-keys.js';
import { rolesOf, type AdminPrincipal, type AuthOutcome, type RequestAuthenticator } from './principal.js';

const SUBJECT_MAX_CHARS = 255;
const EMAIL_MAX_CHARS = 320;
const NAME_MAX_CHARS = 200;
// Shown in a console and written to the audit trail: no control or direction characters.
const PRINTABLE = /^[^\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+$/;

/** What a person is told about a refused token (RFC 6750 §3.1 error_description: no secrets, no token). */
const RULE_DESCRIPTIONS: Readonly<Record<AccessTokenRule, string>> = {
  malformed: 'the access token is not a JWT',
  algorithm: 'the access token is signed with an algorithm that is not accepted',
  type: 'the access token is not an RFC 9068 access token (typ at+jwt)',
  'unknown-key': "the access token is signed with a key the provider does not publish",
  signature: 'the access token signature does not verify',
  issuer: 'the access token is from another issuer than ADMIN_ISSUER',
  audience: 'the access token is for another audience than ADMIN_AUDIENCE',
  expired: 'the access token has expired; sign in again',
  'not-yet-valid': 'the access token is not valid yet',
  claims: 'the access token lacks a claim this API needs (sub, exp, iat)',
};

export const invalidToken = (description: string): AuthOutcome => ({ ok: false, status: 401, error: 'invalid_token', description });

function shortText(value: unknown, maxChars: number): string | undefined {
  return typeof value === 'string' && value !== '' && value.length <= maxChars && PRINTABLE.test(value) ? value : undefined;
}

function principalOf(payload: JWTPayload, rolesClaim: string): AdminPrincipal | undefined {
  const subject = shortText(payload.sub, SUBJECT_MAX_CHARS);
  if (subject === undefined) return undefined;
  const email = shortText(payload['email'], EMAIL_MAX_CHARS);
  const name = shortText(payload['name'], NAME_MAX_CHARS);
  return {
    subject,
    ...(email === undefined ? {} : { email }),
    ...(name === undefined ? {} : { name }),
    roles: rolesOf(payload[rolesClaim]),
  };
}

/**
 * Verifies an admin access token from ADMIN_ISSUER with the partner tokens' rules (access-token.ts)
 * and reads the person from it: sub, email and name when present, the roles from ADMIN_ROLES_CLAIM.
 * The one path for roles and expiry: the Bearer header, and the console's session for the token it holds.
 */
export class AdminTokenVerifier {
  constructor(
    private readonly settings: AdminSettings,
    private readonly keys: KeySource,
    private readonly now: () => number = Date.now,
  ) {}

  async verify(token: string, now: number = this.now()): Promise<AuthOutcome> {
    if (!this.keys.loaded) return invalidToken("the provider's signing keys have not been fetched yet; try again in a few seconds");
    const outcome = await verifyAccessToken(token, this.keys, this.settings, now, ['sub']);
    if (!outcome.valid) return invalidToken(RULE_DESCRIPTIONS[outcome.rule]);
    const principal = principalOf(outcome.payload, this.settings.rolesClaim);
    if (principal === undefined) return invalidToken('the access token has no usable sub claim');
    return { ok: true, principal };
  }
}

/** `Authorization: Bearer <token>` (RFC 6750 §2.1); a request without Authorization is not this way's. */
export class BearerAuthenticator implements RequestAuthenticator {
  constructor(private readonly verifier: AdminTokenVerifier) {}

  async authenticate(request: IncomingMessage): Promise<AuthOutcome | undefined> {
    const header = request.headers.authorization;
    if (header === undefined) return undefined;
    const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
    if (match === null) return { ok: false, status: 401, error: 'invalid_request', description: 'send the access token as Authorization: Bearer <token>' };
    return this.verifier.verify(match[1] ?? '');
  }
}
