// The ext_authz messages as proto-loader passes them (options in proto.ts), by proto field names, only the fields
// used. A decoded message comes from the network: every field is optional, checked at run time by the request view.

/** envoy.config.core.v3.HeaderValue */
export interface HeaderValueMessage {
  readonly key?: string | null;
  readonly value?: string | null;
  /** Filled instead of `value` when the filter's encode_raw_headers is on. */
  readonly raw_value?: Uint8Array | null;
}

/** envoy.config.core.v3.HeaderValueOption.HeaderAppendAction by number; `check` names any of them another server sends. */
export const HeaderAppendAction = Object.freeze({
  APPEND_IF_EXISTS_OR_ADD: 0,
  ADD_IF_ABSENT: 1,
  OVERWRITE_IF_EXISTS_OR_ADD: 2,
  OVERWRITE_IF_EXISTS: 3,
} as const);
export type HeaderAppendAction = (typeof HeaderAppendAction)[keyof typeof HeaderAppendAction];

/** envoy.config.core.v3.HeaderValueOption; the deprecated `append` stays unset, so Envoy applies `append_action`. */
export interface HeaderValueOptionMessage {
  readonly header: { readonly key: string; readonly value: string };
  readonly append_action: HeaderAppendAction;
}

/** Struct values are camel case despite keepCase: proto-loader takes well-known types from protobufjs's own. */
export type CheckResponseMessage =
  | {
      readonly status: { readonly code: number; readonly message: string };
      readonly ok_response: {
        readonly headers: readonly HeaderValueOptionMessage[];
        readonly headers_to_remove: readonly string[];
        readonly response_headers_to_add: readonly HeaderValueOptionMessage[];
      };
      readonly dynamic_metadata: { readonly fields: Readonly<Record<string, { readonly stringValue: string }>> };
    }
  | {
      readonly status: { readonly code: number; readonly message: string };
      /** status.code: envoy.type.v3.HttpStatus, whose numbers are the HTTP status codes. */
      readonly denied_response: {
        readonly status: { readonly code: number };
        readonly headers: readonly HeaderValueOptionMessage[];
        readonly body: string;
      };
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
