import { status as GrpcStatus } from '@grpc/grpc-js';
import { denialBody, ERROR_CATALOGUE } from '../decision/error-catalogue.js';
import type { Decision } from '../decision/types.js';
import { HeaderAppendAction, type CheckResponseMessage, type HeaderValueOptionMessage } from './messages.js';

/** The header that tells the upstream which site the request was authenticated for. */
export const SITE_ID_HEADER = 'x-site-id';

/**
 * Replaces whatever the client sent under this name. `append` stays unset: with it unset, recent
 * Envoy applies append_action, whose default (APPEND_IF_EXISTS_OR_ADD) would leave a forged
 * x-site-id beside ours (issue #3, decision 6).
 */
function overwrite(key: string, value: string): HeaderValueOptionMessage {
  return { header: { key, value }, append_action: HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD };
}

/**
 * The CheckResponse Envoy acts on. Allow: status OK, x-site-id for the upstream, and the site and key
 * ids as dynamic metadata for Envoy's access logs and rate limits. Deny: the catalogue's gRPC code
 * and short code in `status`, and the HTTP status, JSON content type and spec body that Envoy sends
 * to the client.
 */
export function toCheckResponse(decision: Decision): CheckResponseMessage {
  if (decision.outcome === 'allow') {
    return {
      status: { code: GrpcStatus.OK, message: '' },
      ok_response: {
        headers: [overwrite(SITE_ID_HEADER, decision.siteId)],
        headers_to_remove: [],
        response_headers_to_add: [],
      },
      dynamic_metadata: {
        fields: {
          site_id: { stringValue: decision.siteId },
          key_id: { stringValue: decision.keyId },
        },
      },
    };
  }
  const entry = ERROR_CATALOGUE[decision.denial.errorId];
  return {
    status: { code: entry.grpcStatus, message: entry.code },
    denied_response: {
      status: { code: entry.httpStatus },
      headers: [overwrite('content-type', 'application/json')],
      body: denialBody(decision.denial),
    },
  };
}
