import { denialBody, denialChallenge, ERROR_CATALOGUE, GrpcCode } from '../decision/error-catalogue.js';
import type { Decision, Denial } from '../decision/types.js';
import { HeaderAppendAction, type CheckResponseMessage, type HeaderValueOptionMessage } from './messages.js';

/** The header that tells the upstream which site the request was authenticated for. */
export const SITE_ID_HEADER = 'x-site-id';

/**
 * Replaces whatever the client sent under this name. `append` stays unset: with it unset, recent
 * Envoy applies append_action, whose default (APPEND_IF_EXISTS_OR_ADD) would leave a forged
 * x-site-id beside ours.
 */
function overwrite(key: string, value: string): HeaderValueOptionMessage {
  return { header: { key, value }, append_action: HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD };
}

/** What every allowed response carries besides the decision's own headers, fixed by configuration. */
export interface AllowedResponsePolicy {
  /** Headers for the partner's response to an API-key request: Deprecation, Sunset, Link. Tokens are not deprecated. */
  readonly responseHeaders: readonly HeaderValueOptionMessage[];
  /** Request headers the upstream must not see, e.g. authorization (STRIP_AUTHORIZATION). */
  readonly removeHeaders: readonly string[];
}

export const PLAIN_ALLOWED_RESPONSE: AllowedResponsePolicy = Object.freeze({ responseHeaders: [], removeHeaders: [] });

/** The migration guide as the `Link` relations RFC 9745 (deprecation) and RFC 8594 (sunset) define; none without a guide. */
function guideLinks(guideUrl: string | undefined): HeaderValueOptionMessage[] {
  if (guideUrl === undefined) return [];
  const link = (rel: string): HeaderValueOptionMessage => ({
    header: { key: 'link', value: `<${guideUrl}>; rel="${rel}"` },
    append_action: HeaderAppendAction.APPEND_IF_EXISTS_OR_ADD,
  });
  return [link('deprecation'), link('sunset')];
}

/**
 * What a denial's response carries besides its JSON body: a refused token's Bearer challenge (RFC
 * 6750 §3); for a 105, the migration guide's Link, and during a brownout Retry-After at its end
 * (RFC 9110 §10.2.3, as an HTTP-date so that the response stays the same for the brownout's length;
 * none for one that ends at infinity).
 */
function denialHeaders(denial: Denial): HeaderValueOptionMessage[] {
  const headers = [overwrite('content-type', 'application/json')];
  const challenge = denialChallenge(denial);
  if (challenge !== undefined) headers.push(overwrite('www-authenticate', challenge));
  if (denial.errorId === 105) {
    const until = denial.brownout?.until;
    if (until !== undefined && Number.isFinite(until)) headers.push(overwrite('retry-after', new Date(until).toUTCString()));
    headers.push(...guideLinks(denial.guideUrl));
  }
  return headers;
}

/**
 * RFC 9745 `Deprecation: @<unix seconds>`, RFC 8594 `Sunset: <IMF-fixdate>`, and with a guide the
 * `Link` relations both define. Link is appended, since the upstream may send Link headers of its own.
 */
export function sunsetNotice(options: {
  readonly deprecatedAt: number;
  readonly sunsetAt: number;
  readonly guideUrl: string | undefined;
  readonly stripAuthorization: boolean;
}): AllowedResponsePolicy {
  return Object.freeze({
    responseHeaders: [
      overwrite('deprecation', `@${Math.floor(options.deprecatedAt / 1000)}`),
      overwrite('sunset', new Date(options.sunsetAt).toUTCString()),
      ...guideLinks(options.guideUrl),
    ],
    removeHeaders: options.stripAuthorization ? ['authorization'] : [],
  });
}

/**
 * What SHADOW_MODE answers instead of a denial: the request goes through, and the upstream learns
 * nothing it would not have learnt anyway. Only a 105 (credentials valid, refused for the sunset)
 * carries x-site-id; for every other would-be denial a client-sent x-site-id is removed, so that a
 * stranger cannot name a site to the upstream. `shadow_error_id` in the dynamic metadata lets
 * Envoy's access log show what would have happened.
 */
export function toShadowResponse(denial: Denial, allowed: AllowedResponsePolicy = PLAIN_ALLOWED_RESPONSE): CheckResponseMessage {
  const shadowErrorId = { shadow_error_id: { stringValue: String(denial.errorId) } };
  if (denial.errorId === 105) {
    return {
      status: { code: GrpcCode.OK, message: '' },
      ok_response: { headers: [overwrite(SITE_ID_HEADER, denial.siteId)], headers_to_remove: allowed.removeHeaders, response_headers_to_add: allowed.responseHeaders },
      dynamic_metadata: {
        fields: { site_id: { stringValue: denial.siteId }, auth_method: { stringValue: 'api_key' }, key_id: { stringValue: denial.keyId }, ...shadowErrorId },
      },
    };
  }
  return {
    status: { code: GrpcCode.OK, message: '' },
    ok_response: { headers: [], headers_to_remove: [SITE_ID_HEADER, ...allowed.removeHeaders], response_headers_to_add: [] },
    dynamic_metadata: { fields: shadowErrorId },
  };
}

/**
 * The CheckResponse Envoy acts on. Allow: status OK, x-site-id for the upstream, and as dynamic
 * metadata for Envoy's access logs and rate limits the site id, the method (auth_method: api_key or
 * token) and the key id or the token's client_id. Deny: the catalogue's gRPC code
 * and short code in `status`, and the HTTP status, JSON content type and spec body that Envoy sends
 * to the client.
 */
export function toCheckResponse(decision: Decision, allowed: AllowedResponsePolicy = PLAIN_ALLOWED_RESPONSE): CheckResponseMessage {
  if (decision.outcome === 'allow') {
    const [credentialField, credentialValue] = decision.method === 'api_key' ? ['key_id', decision.keyId] : ['client_id', decision.clientId];
    return {
      status: { code: GrpcCode.OK, message: '' },
      ok_response: {
        headers: [overwrite(SITE_ID_HEADER, decision.siteId)],
        headers_to_remove: allowed.removeHeaders,
        response_headers_to_add: decision.method === 'api_key' ? allowed.responseHeaders : [],
      },
      dynamic_metadata: {
        fields: {
          site_id: { stringValue: decision.siteId },
          auth_method: { stringValue: decision.method },
          [credentialField]: { stringValue: credentialValue },
        },
      },
    };
  }
  const entry = ERROR_CATALOGUE[decision.denial.errorId];
  return {
    status: { code: entry.grpcStatus, message: entry.code },
    denied_response: {
      status: { code: entry.httpStatus },
      headers: denialHeaders(decision.denial),
      body: denialBody(decision.denial),
    },
  };
}

/**
 * What a denied CheckResponse is made of, as a key for its kept encoding: the error id and its message,
 * as denialMessage made it (the statuses follow from the id, the body from both, a 106's challenge
 * from the rule its message names, a 105's Retry-After and Link from the brownout's end and the guide
 * its message names). The message quotes the key masked only, so the key holds no secret either.
 */
export function deniedResponseKey(denial: Denial, message: string): string {
  return `${denial.errorId} ${message}`;
}
