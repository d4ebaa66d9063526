import { Refusal } from '../operations/refusal.js';
import { AdminError, adminErrorText, type AdminErrorCode } from '../store/admin-transactions.js';

/** An answer other than success, as `{"error":{"code","field","message"}}` with its status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
    /** The message in the console's words, where they differ from the API's (a button, not a request). */
    readonly consoleMessage?: string,
    /** The body field or query parameter it concerns; undefined when none. */
    readonly field?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The codes of refused requests that are not the store's: the API's own, stable for clients. */
export const INVALID_REQUEST = 'INVALID_REQUEST';

const ADMIN_ERROR_STATUS: Readonly<Record<AdminErrorCode, number>> = {
  SITE_NOT_FOUND: 404,
  KEY_NOT_FOUND: 404,
  BROWNOUT_NOT_FOUND: 404,
  TOKEN_CLIENT_NOT_FOUND: 404,
  SITE_EXISTS: 409,
  KEY_DUPLICATE: 409,
  // Only an active key is rolled: an expired or revoked one conflicts with the request.
  KEY_NOT_ACTIVE: 409,
  TOKEN_CLIENT_EXISTS: 409,
  // Revoking what is not on the allowlist conflicts with what is there (the message names it).
  CIDR_NOT_ON_ALLOWLIST: 409,
  // Registration at the issuer: what this service was not set up for, or cannot do for that client.
  TOKEN_CLIENT_NOT_MANAGED: 409,
  REGISTRATION_OFF: 409,
  REGISTRATION_TOKEN_UNREADABLE: 409,
  // The issuer, a server behind this one, said no or gave no usable answer.
  ISSUER_REFUSED: 502,
  ISSUER_UNREACHABLE: 502,
  ISSUER_ANSWER_UNUSABLE: 502,
  SCHEMA_MISSING: 503,
};

/**
 * What the operations and the store say, as an answer: an operation's refusal is 400 with its code and
 * field, the store's AdminError codes keep their names (404 or 409). Anything else is not the caller's
 * to see (undefined: the server answers 500 and logs it).
 */
export function apiErrorOf(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (error instanceof Refusal) return new ApiError(400, error.code, error.message, {}, undefined, error.field);
  if (error instanceof AdminError) {
    const consoleMessage = error.nextStep === undefined ? undefined : adminErrorText(error, 'console');
    return new ApiError(ADMIN_ERROR_STATUS[error.code], error.code, adminErrorText(error, 'api'), {}, consoleMessage, error.field);
  }
  return undefined;
}
