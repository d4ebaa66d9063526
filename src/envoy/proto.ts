import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
import { PROTO_DIR } from '../paths.js';
import type { CheckRequestMessage, CheckResponseMessage } from './messages.js';

/**
 * How every ext_authz message is turned into JS and back: proto field names (keepCase), int64 as
 * decimal strings, enums as numbers (HTTP status codes pass through as they are), bytes as Buffer,
 * unset fields present with their defaults, and the name of the set member on each oneof.
 */
export const PROTO_LOADER_OPTIONS: Readonly<Options> = Object.freeze({
  keepCase: true,
  longs: String,
  enums: Number,
  bytes: Buffer,
  defaults: true,
  oneofs: true,
});

export const AUTHORIZATION_SERVICE_NAME = 'envoy.service.auth.v3.Authorization';
export const AUTHORIZATION_PROTO_FILE = 'envoy/service/auth/v3/external_auth.proto';

/**
 * A CheckResponse encoded once and sent many times: the Check method's serializer passes its bytes
 * through as they are (grpc-js copies them into each call's frame).
 */
export class EncodedCheckResponse {
  constructor(readonly bytes: Buffer) {}
}

/** A response the Check handler may send: a message to encode, or one already encoded. */
export type CheckResponseToSend = CheckResponseMessage | EncodedCheckResponse;

/** The Authorization service as both the server (Check handler) and the client script use it. */
export interface AuthorizationServiceDefinition extends ServiceDefinition {
  readonly Check: Omit<MethodDefinition<CheckRequestMessage, CheckResponseMessage>, 'responseSerialize'> & {
    readonly responseSerialize: (response: CheckResponseToSend) => Buffer;
  };
}

function loadAuthorizationService(): { service: AuthorizationServiceDefinition; encode: (response: CheckResponseMessage) => Buffer } {
  const definition = loadSync(AUTHORIZATION_PROTO_FILE, { ...PROTO_LOADER_OPTIONS, includeDirs: [PROTO_DIR] });
  const service = definition[AUTHORIZATION_SERVICE_NAME] as Record<string, MethodDefinition<object, object>> | undefined;
  const check = service?.['Check'] as MethodDefinition<CheckRequestMessage, CheckResponseMessage> | undefined;
  if (check === undefined || check.path !== `/${AUTHORIZATION_SERVICE_NAME}/Check`) {
    throw new Error(`${AUTHORIZATION_PROTO_FILE} under ${PROTO_DIR} does not define ${AUTHORIZATION_SERVICE_NAME}/Check`);
  }
  const encode = check.responseSerialize;
  const checkMethod: AuthorizationServiceDefinition['Check'] = {
    ...check,
    responseSerialize: (response) => (response instanceof EncodedCheckResponse ? response.bytes : encode(response)),
  };
  return { service: { ...service, Check: checkMethod }, encode };
}

const loaded = loadAuthorizationService();

/** Loaded once, at import, from the project's own proto/ (never from Envoy's upstream tree). */
export const AUTHORIZATION_SERVICE: AuthorizationServiceDefinition = loaded.service;

/**
 * The Authorization service whose Check reads each request with `readRequest` instead of decoding all
 * of it: the server's, which keeps only what the request view reads (check-request-reader.ts).
 */
export function authorizationServiceReading(readRequest: (bytes: Buffer) => CheckRequestMessage): AuthorizationServiceDefinition {
  return { ...AUTHORIZATION_SERVICE, Check: { ...AUTHORIZATION_SERVICE.Check, requestDeserialize: readRequest } };
}

/** A CheckResponse in protobuf, as proto-loader encodes it with our proto/: the plain encoding. */
export const encodeCheckResponse: (response: CheckResponseMessage) => Buffer = loaded.encode;
