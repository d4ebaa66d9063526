import { Refusal } from '../operations/refusal.js';
import { AdminError, adminErrorText, type AdminErrorCode } from '../store/admin-transactions.js';

/** An answer other than success, as `{"error":{"code","field","message"}}` with its status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
    /** The message in the console's words, where they differ (a button, not a request). */
    readonly consoleMessage?: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const ADMIN_ERROR_STATUS: Readonly<Record<AdminErrorCode, number>> = {
  SITE_NOT_FOUND: 404,
  KEY_NOT_FOUND: 404,
  BROWNOUT_NOT_FOUND: 404,
  TOKEN_CLIENT_NOT_FOUND: 404,
  SITE_EXISTS: 409,
  KEY_DUPLICATE: 409,
  KEY_NOT_ACTIVE: 409,
  TOKEN_CLIENT_EXISTS: 409,
  CIDR_NOT_ON_ALLOWLIST: 409,
  TOKEN_CLIENT_NOT_MANAGED: 409,
  REGISTRATION_OFF: 409,
  REGISTRATION_TOKEN_UNREADABLE: 409,
  // The issuer, a server behind this one, said no or gave no usable answer.
  ISSUER_REFUSED: 502,
  ISSUER_UNREACHABLE: 502,
  ISSUER_ANSWER_UNUSABLE: 502,
  SCHEMA_MISSING: 503,
};

/** An operation's refusal or the store's AdminError as an answer; undefined for anything else (500, logged). */
export function apiErrorOf(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (error instanceof Refusal) return new ApiError(400, error.code, error.message, {}, undefined, error.field);
  if (error instanceof AdminError) {
    const consoleMessage = error.nextStep === undefined ? undefined : adminErrorText(error, 'console');
    return new ApiError(ADMIN_ERROR_STATUS[error.code], error.code, adminErrorText(error, 'api'), {}, consoleMessage, error.field);
  }
  return undefined;
}
