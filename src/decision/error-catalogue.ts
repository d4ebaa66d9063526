import { status as GrpcStatus } from '@grpc/grpc-js';
import type { BodyRule, Denial, ErrorId } from './types.js';

/**
 * Every error a partner can see, in one table (spec, Errors). The HTTP status goes to the partner in
 * Envoy's DeniedHttpResponse; the gRPC code goes to Envoy in CheckResponse.status.
 */
interface CatalogueEntry {
  readonly code: string;
  readonly httpStatus: number;
  readonly grpcStatus: GrpcStatus;
}

export const ERROR_CATALOGUE: Readonly<Record<ErrorId, CatalogueEntry>> = Object.freeze({
  108: { code: 'HEADER_INVALID', httpStatus: 401, grpcStatus: GrpcStatus.UNAUTHENTICATED },
  101: { code: 'SITE_INVALID', httpStatus: 401, grpcStatus: GrpcStatus.UNAUTHENTICATED },
  103: { code: 'IP_NOT_WHITELISTED', httpStatus: 403, grpcStatus: GrpcStatus.PERMISSION_DENIED },
  102: { code: 'API_KEY_INVALID', httpStatus: 401, grpcStatus: GrpcStatus.UNAUTHENTICATED },
  104: { code: 'BODY_CREDENTIALS_INVALID', httpStatus: 401, grpcStatus: GrpcStatus.UNAUTHENTICATED },
});

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

/** The partner-facing message of a denial; never contains a full key. */
export function denialMessage(denial: Denial): string {
  switch (denial.errorId) {
    case 108:
      return 'Site ID or API key is invalid or missing in the header';
    case 101:
      return `Site ID ${denial.siteId} is invalid`;
    case 103:
      return `IP address ${denial.clientIp} is not whitelisted for site ID ${denial.siteId}`;
    case 102:
      return `API key ${denial.maskedKey} is invalid`;
    case 104:
      return denial.rule === 'body-too-large' ? BODY_RULE_MESSAGES[denial.rule](denial.maxBodyBytes) : BODY_RULE_MESSAGES[denial.rule];
  }
}

/** The exact JSON body the spec prescribes: {"error":{"id":N,"message":"..."}}. */
export function denialBody(denial: Denial): string {
  return JSON.stringify({ error: { id: denial.errorId, message: denialMessage(denial) } });
}
