/**
 * The ext_authz messages as @grpc/proto-loader hands them to us and takes them from us, with the
 * options in proto.ts (keepCase, longs as String, enums as Number, bytes as Buffer, defaults, oneofs).
 * Field names are the proto field names of proto/envoy/...; only the fields this service uses.
 *
 * Decoded messages come from the network: every field is optional here and is checked at run time
 * by the request view, because a peer may send anything.
 */

/** envoy.config.core.v3.HeaderValue */
export interface HeaderValueMessage {
  readonly key?: string | null;
  readonly value?: string | null;
  /** Filled instead of `value` when the filter's encode_raw_headers is on. */
  readonly raw_value?: Uint8Array | null;
}

/** envoy.config.core.v3.HeaderValueOption.HeaderAppendAction, by number (enums are loaded as Number). */
export const HeaderAppendAction = Object.freeze({
  APPEND_IF_EXISTS_OR_ADD: 0,
  ADD_IF_ABSENT: 1,
  OVERWRITE_IF_EXISTS_OR_ADD: 2,
  OVERWRITE_IF_EXISTS: 3,
} as const);
export type HeaderAppendAction = (typeof HeaderAppendAction)[keyof typeof HeaderAppendAction];

/**
 * envoy.config.core.v3.HeaderValueOption. `append` (a deprecated BoolValue) is deliberately absent:
 * while it is unset, Envoy applies `append_action`.
 */
export interface HeaderValueOptionMessage {
  readonly header: { readonly key: string; readonly value: string };
  readonly append_action: HeaderAppendAction;
}

/**
 * google.protobuf.Value, restricted to the string kind we send. Camel case despite keepCase:
 * proto-loader takes the well-known types from protobufjs's bundled definitions, which name the
 * fields that way (the wire is the same: field 3).
 */
export interface StringValueMessage {
  readonly stringValue: string;
}

/** google.protobuf.Struct as proto-loader encodes it: a map of field name to Value. */
export interface StructMessage {
  readonly fields: Readonly<Record<string, StringValueMessage>>;
}

/** google.rpc.Status */
export interface RpcStatusMessage {
  readonly code: number;
  readonly message: string;
}

/** envoy.service.auth.v3.DeniedHttpResponse */
export interface DeniedHttpResponseMessage {
  /** envoy.type.v3.HttpStatus; the enum's numbers are the HTTP status codes. */
  readonly status: { readonly code: number };
  readonly headers: readonly HeaderValueOptionMessage[];
  readonly body: string;
}

/** envoy.service.auth.v3.OkHttpResponse */
export interface OkHttpResponseMessage {
  readonly headers: readonly HeaderValueOptionMessage[];
  readonly headers_to_remove: readonly string[];
  readonly response_headers_to_add: readonly HeaderValueOptionMessage[];
}

/** envoy.service.auth.v3.CheckResponse, in the two shapes this service sends. */
export type CheckResponseMessage =
  | {
      readonly status: RpcStatusMessage;
      readonly ok_response: OkHttpResponseMessage;
      readonly dynamic_metadata: StructMessage;
    }
  | {
      readonly status: RpcStatusMessage;
      readonly denied_response: DeniedHttpResponseMessage;
    };

/** envoy.config.core.v3.Address (decoded) */
export interface AddressMessage {
  readonly socket_address?: { readonly address?: string | null } | null;
  readonly pipe?: { readonly path?: string | null } | null;
}

/** envoy.service.auth.v3.AttributeContext.HttpRequest (decoded) */
export interface HttpRequestMessage {
  readonly id?: string | null;
  readonly method?: string | null;
  readonly headers?: Readonly<Record<string, string>> | null;
  readonly header_map?: { readonly headers?: readonly HeaderValueMessage[] | null } | null;
  readonly path?: string | null;
  readonly host?: string | null;
  /** int64, as a decimal string (longs: String); -1 when Envoy does not know the size. */
  readonly size?: string | number | null;
  readonly body?: string | null;
  readonly raw_body?: Uint8Array | null;
}

/** envoy.service.auth.v3.AttributeContext (decoded) */
export interface AttributeContextMessage {
  readonly source?: { readonly address?: AddressMessage | null } | null;
  readonly request?: { readonly http?: HttpRequestMessage | null } | null;
  readonly context_extensions?: Readonly<Record<string, string>> | null;
}

/** envoy.service.auth.v3.CheckRequest (decoded) */
export interface CheckRequestMessage {
  readonly attributes?: AttributeContextMessage | null;
}
