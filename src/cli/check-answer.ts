import { status as GrpcStatus } from '@grpc/grpc-js';
import { HeaderAppendAction } from '../envoy/messages.js';
import { EXIT_ALLOWED, EXIT_DENIED } from './command.js';

/** What `check` and `explain` print with --json: the same object for the service's answer and explain's. */
export interface CheckAnswer {
  readonly allowed: boolean;
  readonly grpcCode: number;
  readonly httpStatus: number | null;
  readonly error: { readonly id: number; readonly message: string } | null;
  // From the allow's dynamic metadata; on a denial only explain knows them.
  readonly siteId: string | null;
  readonly keyId: string | null;
  readonly authMethod: string | null;
  readonly clientId: string | null;
  /** The decision's rule (108, 106 and 104); only explain knows it, the wire carries only the message. */
  readonly rule: string | null;
}

interface ReceivedHeaderOption {
  readonly header?: { readonly key?: string; readonly value?: string } | null;
  readonly append_action?: number;
}

/** A CheckResponse as `check` decodes it or `explain` makes it; read defensively: a server may send anything. */
export interface ReceivedCheckResponse {
  readonly status?: { readonly code?: number; readonly message?: string } | null;
  readonly ok_response?: {
    readonly headers?: readonly ReceivedHeaderOption[] | null;
    readonly headers_to_remove?: readonly string[] | null;
    readonly response_headers_to_add?: readonly ReceivedHeaderOption[] | null;
  } | null;
  readonly denied_response?: {
    readonly status?: { readonly code?: number } | null;
    readonly headers?: readonly ReceivedHeaderOption[] | null;
    readonly body?: string;
  } | null;
  readonly dynamic_metadata?: { readonly fields?: Readonly<Record<string, { readonly stringValue?: string }>> } | null;
}

const isAllowed = (response: ReceivedCheckResponse): boolean =>
  (response.status?.code ?? GrpcStatus.OK) === GrpcStatus.OK && !response.denied_response;

function errorOf(body: string | undefined): CheckAnswer['error'] {
  try {
    const error: unknown = (JSON.parse(body ?? '') as { error?: unknown } | null)?.error;
    const { id, message } = (error ?? {}) as { id?: unknown; message?: unknown };
    return typeof id === 'number' && typeof message === 'string' ? { id, message } : null;
  } catch {
    return null;
  }
}

/** No CheckResponse at all: the RPC failed with this gRPC code (UNAVAILABLE, DEADLINE_EXCEEDED, …). */
export function noVerdict(grpcCode: number): CheckAnswer {
  return { allowed: false, grpcCode, httpStatus: null, error: null, siteId: null, keyId: null, authMethod: null, clientId: null, rule: null };
}

export function answerOf(response: ReceivedCheckResponse): CheckAnswer {
  const grpcCode = response.status?.code ?? GrpcStatus.OK;
  if (!isAllowed(response)) {
    const denied = response.denied_response;
    return { ...noVerdict(grpcCode), httpStatus: denied?.status?.code ?? null, error: errorOf(denied?.body) };
  }
  const field = (name: string) => response.dynamic_metadata?.fields?.[name]?.stringValue ?? null;
  const ids = { siteId: field('site_id'), keyId: field('key_id'), authMethod: field('auth_method') };
  return { ...noVerdict(grpcCode), allowed: true, ...ids, clientId: field('client_id') };
}

/** A CheckResponse is a verdict: Envoy lets the request through or denies it (403 without a denied_response). */
export const exitStatusOf = (answer: CheckAnswer): number => (answer.allowed ? EXIT_ALLOWED : EXIT_DENIED);

export const grpcCodeName = (code: number): string => `${code} ${GrpcStatus[code] ?? 'UNKNOWN'}`;

const appendActionName = (action: number | undefined): string =>
  Object.entries(HeaderAppendAction).find(([, value]) => value === action)?.[0] ?? String(action);

export function verdictText(response: ReceivedCheckResponse): string {
  const code = response.status?.code ?? GrpcStatus.OK;
  if (isAllowed(response)) {
    const option = (what: string) => (header: ReceivedHeaderOption) =>
      `  ${what}${header.header?.key}: ${header.header?.value}  [${appendActionName(header.append_action)}]`;
    return [
      `ALLOW  (gRPC status ${grpcCodeName(code)})`,
      ...(response.ok_response?.headers ?? []).map(option('upstream header   ')),
      ...(response.ok_response?.headers_to_remove ?? []).map((name) => `  removed header    ${name}`),
      ...(response.ok_response?.response_headers_to_add ?? []).map(option('response header   ')),
      ...Object.entries(response.dynamic_metadata?.fields ?? {}).map(
        ([name, value]) => `  dynamic metadata  ${name} = ${value.stringValue ?? JSON.stringify(value)}`,
      ),
    ].join('\n');
  }
  const denied = response.denied_response;
  const detail = response.status?.message ? `, ${response.status.message}` : '';
  return [
    `DENY  HTTP ${denied?.status?.code ?? '(none)'}  (gRPC status ${grpcCodeName(code)}${detail})`,
    ...(denied?.headers ?? []).map((option) => `  ${option.header?.key}: ${option.header?.value}`),
    denied?.body ?? '',
  ].join('\n');
}
