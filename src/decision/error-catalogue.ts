import { POSITIVE_ID_MAX } from '../common/positive-id.js';
import type { BodyRule, Denial, ErrorId, HeaderRule, TokenRefusal, TokenRule } from './types.js';

/**
 * The gRPC status codes a denial carries to Envoy (google.rpc.Code), named here so that the
 * decision depends on no transport library.
 */
export const GrpcCode = Object.freeze({ OK: 0, PERMISSION_DENIED: 7, UNAUTHENTICATED: 16 } as const);
export type GrpcCode = (typeof GrpcCode)[keyof typeof GrpcCode];

type DenialOf<K extends ErrorId> = Extract<Denial, { errorId: K }>;

/**
 * One error a partner can see: its stable code, the HTTP status the partner gets in Envoy's
 * DeniedHttpResponse, the gRPC code Envoy gets in CheckResponse.status, and the message.
 */
interface CatalogueEntry<K extends ErrorId> {
  readonly code: string;
  readonly httpStatus: number;
  readonly grpcStatus: GrpcCode;
  readonly message: (denial: DenialOf<K>) => string;
  /** A WWW-Authenticate challenge for the denied response (RFC 6750 §3), where the error has one. */
  readonly challenge?: (denial: DenialOf<K>) => string;
}

/** A rule's message; the one rule whose message names a limit takes it. */
type BodyRuleMessages = { readonly [R in BodyRule]: R extends 'body-too-large' ? (maxBodyBytes: number) => string : string };

const BODY_RULE_MESSAGES: BodyRuleMessages = Object.freeze({
  'body-missing': 'Request body is missing: it must be a JSON object carrying siteid and apikey',
  'body-not-forwarded':
    'Request body did not reach the authorization service, so siteid and apikey cannot be verified',
  'body-partial': 'Request body was truncated before authorization, so siteid and apikey cannot be verified',
  'body-too-large': (maxBodyBytes: number) =>
    `Request body is larger than the authorization service accepts (${maxBodyBytes} bytes), so siteid and apikey cannot be verified`,
  'body-not-utf8': 'Request body is not valid UTF-8',
  'body-not-json': 'Request body is not valid JSON',
  'body-not-object': 'Request body must be a JSON object carrying siteid and apikey',
  'siteid-missing': 'Request body has no siteid: it must equal the site ID in the Authorization header',
  'siteid-duplicate': 'Request body has more than one siteid',
  'siteid-mismatch': 'Request body siteid does not match the site ID in the Authorization header',
  'apikey-missing': 'Request body has no apikey: it must equal the API key in the Authorization header',
  'apikey-duplicate': 'Request body has more than one apikey',
  'apikey-mismatch': 'Request body apikey does not match the API key in the Authorization header',
});

/** A token request's body may name a site, but only the token's: the header names none. */
const TOKEN_BODY_RULE_MESSAGES: Readonly<Partial<Record<BodyRule, string>>> = Object.freeze({
  'siteid-missing': 'Request body has a member that reads as siteid but is not spelled siteid; write siteid, or leave it out',
  'siteid-mismatch': 'Request body siteid does not match the site that the access token was issued for',
});

function bodyRuleMessage(denial: DenialOf<104>): string {
  if (denial.rule === 'body-too-large') return BODY_RULE_MESSAGES[denial.rule](denial.maxBodyBytes);
  return (denial.clientId !== undefined ? TOKEN_BODY_RULE_MESSAGES[denial.rule] : undefined) ?? BODY_RULE_MESSAGES[denial.rule];
}

/**
 * Which header rule a 108 broke, in words: the partner gets one message for all (spec, Errors 108),
 * while the decision log and `explain` say which, so support knows what to tell them.
 */
export const HEADER_RULE_WORDS: { readonly [R in HeaderRule]: string } = Object.freeze({
  'header-missing': 'the request has no Authorization header, or an empty one; a partner sends Authorization: <site id>:<API key>',
  'header-malformed': 'the Authorization header is not <site id>:<API key> with exactly one colon, nor Bearer <token>',
  'site-id-invalid':
    `the site id in the Authorization header is not a positive whole number without sign, spaces or leading zero, at most ${POSITIVE_ID_MAX}`,
  'api-key-invalid': 'the API key in the Authorization header is not a UUID (8-4-4-4-12 hexadecimal digits)',
});

/** A rule's description; the rules whose fix is to ask for a token for this API take the resource to ask for. */
type TokenRuleDescriptions = { readonly [R in TokenRule]: R extends 'malformed' | 'audience' ? (resource: string | undefined) => string : string };

/** `resource=<TOKEN_AUDIENCE>` (RFC 8707), or words for it where the decision was not told the value. */
const resourceParameter = (resource: string | undefined): string => (resource === undefined ? 'the resource parameter of this API' : `resource=${resource}`);

/**
 * What is wrong with a token, in words a migrating partner can act on (RFC 6750 error_description:
 * printable ASCII without quote or backslash; TOKEN_AUDIENCE is held to the same in config.ts).
 * Never anything of the token itself.
 */
export const TOKEN_RULE_DESCRIPTIONS: TokenRuleDescriptions = Object.freeze({
  'tokens-disabled': 'token-based authentication is not enabled on this service; send Authorization: <Site-ID>:<API-Key>',
  'keys-unavailable': "the issuer's signing keys are unavailable to this service right now, so no token can be verified; nothing is wrong with your token: retry later",
  // An issuer that is not told the resource hands out an opaque token, or a JWT for another API.
  malformed: (resource: string | undefined) =>
    `the token is not a signed JWT (JWS compact serialization); request it from the token endpoint with ${resourceParameter(resource)} to get a JWT access token for this API`,
  algorithm: 'the token is signed with an algorithm this service does not accept',
  type: 'the token is not a JWT access token: its typ header must be at+jwt (RFC 9068)',
  'unknown-key': 'the token names a signing key (kid) that the issuer does not publish',
  signature: 'the token signature does not verify',
  issuer: 'the token was issued by another issuer (iss) than the one this API trusts; request it from the token endpoint you were given for this API',
  audience: (resource: string | undefined) => `the token audience (aud) does not include this API; request the token with ${resourceParameter(resource)}`,
  expired: 'the token has expired; request a new one',
  'not-yet-valid': 'the token is not valid yet (nbf or iat is in the future)',
  'too-old': 'the token was issued too long ago, or is valid for longer than this API accepts; request a new one',
  claims: 'the token lacks a required claim (exp, iat or client_id) or has one of the wrong type',
  revoked: "the token was issued before the site's tokens were revoked; request a new one",
});

/** The description of a refused token's rule, with the resource to ask for where the rule needs it. */
export function tokenRuleDescription(refusal: TokenRefusal): string {
  const description = TOKEN_RULE_DESCRIPTIONS[refusal.rule];
  return typeof description === 'function' ? description(refusal.resource) : description;
}

const day = (epochMs: number): string => new Date(epochMs).toISOString().slice(0, 10);
const instant = (epochMs: number): string => new Date(epochMs).toISOString().replace('.000Z', 'Z');

/** Spec, Versioning: the message says what is happening, until when, and where to go instead. */
function sunsetMessage(denial: DenialOf<105>): string {
  const guide = denial.guideUrl === undefined ? '' : `; migration guide: ${denial.guideUrl}`;
  if (denial.reason === 'tokens-only') return `API key authentication is switched off for site ${denial.siteId}; use token-based authentication${guide}`;
  if (denial.reason === 'retired') return `API key authentication has been retired; use token-based authentication${guide}`;
  // A brownout written straight into the database may end at 'infinity': no date to name then.
  const until = denial.brownout === undefined || !Number.isFinite(denial.brownout.until) ? '' : ` until ${instant(denial.brownout.until)}`;
  return (
    `API key authentication is switched off${until} for a scheduled brownout ahead of its retirement on ${day(denial.sunsetAt)}; ` +
    `migrate to token-based authentication${guide}`
  );
}

/** Every error a partner can see, in one table (spec, Errors), in the order decide() checks them. */
export const ERROR_CATALOGUE: { readonly [K in ErrorId]: CatalogueEntry<K> } = Object.freeze({
  108: {
    code: 'HEADER_INVALID',
    httpStatus: 401,
    grpcStatus: GrpcCode.UNAUTHENTICATED,
    message: () => 'Site ID or API key is invalid or missing in the header',
  },
  106: {
    code: 'ACCESS_TOKEN_INVALID',
    httpStatus: 401,
    grpcStatus: GrpcCode.UNAUTHENTICATED,
    message: (denial) => `Access token is invalid: ${tokenRuleDescription(denial)}`,
    challenge: (denial) => `Bearer error="invalid_token", error_description="${tokenRuleDescription(denial)}"`,
  },
  107: {
    code: 'TOKEN_CLIENT_UNKNOWN',
    httpStatus: 403,
    grpcStatus: GrpcCode.PERMISSION_DENIED,
    message: (denial) => `Token client ${denial.clientId} is not registered for any site; ask your account manager to register client ${denial.clientId} for your site`,
  },
  101: { code: 'SITE_INVALID', httpStatus: 401, grpcStatus: GrpcCode.UNAUTHENTICATED, message: (denial) => `Site ID ${denial.siteId} is invalid` },
  103: {
    code: 'IP_NOT_WHITELISTED',
    httpStatus: 403,
    grpcStatus: GrpcCode.PERMISSION_DENIED,
    message: (denial) => `IP address ${denial.clientIp} is not whitelisted for site ID ${denial.siteId}`,
  },
  102: { code: 'API_KEY_INVALID', httpStatus: 401, grpcStatus: GrpcCode.UNAUTHENTICATED, message: (denial) => `API key ${denial.maskedKey} is invalid` },
  104: { code: 'BODY_CREDENTIALS_INVALID', httpStatus: 401, grpcStatus: GrpcCode.UNAUTHENTICATED, message: bodyRuleMessage },
  105: { code: 'API_KEY_AUTH_RETIRED', httpStatus: 401, grpcStatus: GrpcCode.UNAUTHENTICATED, message: sunsetMessage },
});

/** The partner-facing message of a denial; never contains a full key. */
export function denialMessage(denial: Denial): string {
  // The entry is the one for denial.errorId, so it takes this denial (TypeScript cannot pair them).
  const entry = ERROR_CATALOGUE[denial.errorId] as CatalogueEntry<ErrorId>;
  return entry.message(denial as never);
}

/** The WWW-Authenticate challenge of a denial, for the errors that have one. */
export function denialChallenge(denial: Denial): string | undefined {
  const entry = ERROR_CATALOGUE[denial.errorId] as CatalogueEntry<ErrorId>;
  return entry.challenge?.(denial as never);
}

/** The exact JSON body the spec prescribes: {"error":{"id":N,"message":"..."}}. */
export function denialBody(denial: Denial): string {
  return JSON.stringify({ error: { id: denial.errorId, message: denialMessage(denial) } });
}
