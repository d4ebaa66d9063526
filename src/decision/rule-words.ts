import { POSITIVE_ID_MAX } from '../common/positive-id.js';
import type { BodyRule, HeaderRule, TokenRefusal, TokenRule } from './types.js';

type BodyRuleMessages = { readonly [R in BodyRule]: R extends 'body-too-large' ? (maxBodyBytes: number) => string : string };

/** What the partner is told of each broken body rule (error 104). */
export const BODY_RULE_MESSAGES: BodyRuleMessages = Object.freeze({
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
export const TOKEN_BODY_RULE_MESSAGES: Readonly<Partial<Record<BodyRule, string>>> = Object.freeze({
  'siteid-missing': 'Request body has a member that reads as siteid but is not spelled siteid; write siteid, or leave it out',
  'siteid-mismatch': 'Request body siteid does not match the site that the access token was issued for',
});

/** What an operator does about some body rules (`explain`); the partner-facing message already names the rule. */
export const BODY_RULE_HINTS: Readonly<Partial<Record<BodyRule, string>>> = Object.freeze({
  'body-missing': 'a route whose requests have no body can opt out with the context extension body_credentials: optional',
  'body-not-forwarded':
    "the request declares a body but none reached the service: turn on with_request_body in Envoy's ext_authz filter",
  'body-partial':
    'Envoy cut the body at max_request_bytes (x-envoy-auth-partial-body: true): raise max_request_bytes, or set allow_partial_message: false so that Envoy refuses larger bodies itself',
});

/** The partner gets one message for every 108 (spec, Errors 108); the log and `explain` say which rule. */
export const HEADER_RULE_WORDS: { readonly [R in HeaderRule]: string } = Object.freeze({
  'header-missing': 'the request has no Authorization header, or an empty one; a partner sends Authorization: <site id>:<API key>',
  'header-malformed': 'the Authorization header is not <site id>:<API key> with exactly one colon, nor Bearer <token>',
  'site-id-invalid':
    `the site id in the Authorization header is not a positive whole number without sign, spaces or leading zero, at most ${POSITIVE_ID_MAX}`,
  'api-key-invalid': 'the API key in the Authorization header is not a UUID (8-4-4-4-12 hexadecimal digits)',
});

type TokenRuleDescriptions = { readonly [R in TokenRule]: R extends 'malformed' | 'audience' ? (resource: string | undefined) => string : string };

const resourceParameter = (resource: string | undefined): string => (resource === undefined ? 'the resource parameter of this API' : `resource=${resource}`);

/** Nothing of the token; RFC 6750 error_description: printable ASCII, no quote or backslash (as TOKEN_AUDIENCE). */
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

export function tokenRuleDescription(refusal: TokenRefusal): string {
  const description = TOKEN_RULE_DESCRIPTIONS[refusal.rule];
  return typeof description === 'function' ? description(refusal.resource) : description;
}

/** What an operator does about a refused token (`explain`). */
export const TOKEN_RULE_HINTS: Readonly<Partial<Record<TokenRule, string>>> = Object.freeze({
  'tokens-disabled': 'set TOKEN_ISSUER and TOKEN_AUDIENCE to accept access tokens (docs/tokens.md, "Token-based authentication")',
  'keys-unavailable':
    "the issuer's keys could not be fetched from TOKEN_JWKS_URL (or TOKEN_ISSUER's discovery document) and the database holds no key set stored by an earlier fetch: check that the issuer is up and reachable from here (docs/tokens.md, \"When the issuer is down\")",
  malformed:
    'an issuer that is not told the resource (RFC 8707) often hands out an opaque token instead of a JWT: the partner must send resource=<TOKEN_AUDIENCE> with the token request',
  issuer: 'the service trusts TOKEN_ISSUER only; the token says (unverified) it comes from another issuer, e.g. a staff sign-in or a test issuer',
  audience: "the partner must request the token for this API's resource (TOKEN_AUDIENCE)",
  type: 'an issuer that writes typ JWT can be accepted with TOKEN_TYPES=at+jwt,jwt',
  'unknown-key': "the service fetches the issuer's keys again at most every few seconds when a token names a new one; if this persists, the token was not signed by TOKEN_ISSUER",
  revoked: '`sitekey-authz site revoke-tokens` was run for the site after the token was issued',
});
