import { denialBody, denialChallenge, ERROR_CATALOGUE, GrpcCode } from '../decision/error-catalogue.js';
import type { Decision, Denial } from '../decision/types.js';
import { HeaderAppendAction, type CheckResponseMessage, type HeaderValueOptionMessage } from './messages.js';

const SITE_ID_HEADER = 'x-site-id';

/** append_action's default would leave a forged x-site-id beside ours. */
function overwrite(key: string, value: string): HeaderValueOptionMessage {
  return { header: { key, value }, append_action: HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD };
}

export interface AllowedResponsePolicy {
  /** For an API-key request's response only: tokens are not deprecated. */
  readonly responseHeaders: readonly HeaderValueOptionMessage[];
  readonly removeHeaders: readonly string[];
}

export const PLAIN_ALLOWED_RESPONSE: AllowedResponsePolicy = Object.freeze({ responseHeaders: [], removeHeaders: [] });

/** The `Link` relations of RFC 9745 and RFC 8594. */
function guideLinks(guideUrl: string | undefined): HeaderValueOptionMessage[] {
  if (guideUrl === undefined) return [];
  const link = (rel: string): HeaderValueOptionMessage => ({
    header: { key: 'link', value: `<${guideUrl}>; rel="${rel}"` },
    append_action: HeaderAppendAction.APPEND_IF_EXISTS_OR_ADD,
  });
  return [link('deprecation'), link('sunset')];
}

/** A 105's Retry-After is an HTTP-date, so that the response stays the same for the brownout's length. */
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

/** Link is appended: the upstream may send Link headers of its own. */
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

/** SHADOW_MODE: only a 105 (valid credentials) carries x-site-id; else a stranger's is removed from the request. */
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

/** The CheckResponse Envoy acts on; its metadata feeds Envoy's access logs and rate limits. */
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

/** Everything a denied response is made of follows from the id and denialMessage's text (which masks the key). */
export function deniedResponseKey(denial: Denial, message: string): string {
  return `${denial.errorId} ${message}`;
}
