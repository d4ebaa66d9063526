import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
import { PROTO_DIR } from '../paths.js';
import type { CheckRequestMessage, CheckResponseMessage } from './messages.js';

/** Enums as numbers let HTTP status codes pass as they are. */
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

/** A CheckResponse encoded once and sent many times: the Check serializer passes its bytes through. */
export class EncodedCheckResponse {
  constructor(readonly bytes: Buffer) {}
}

export type CheckResponseToSend = CheckResponseMessage | EncodedCheckResponse;

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

/** Loaded once, at import, from the project's own proto/. */
export const AUTHORIZATION_SERVICE: AuthorizationServiceDefinition = loaded.service;

/** The server's: Check reads only what the request view needs (check-request-reader.ts), not the whole request. */
export function authorizationServiceReading(readRequest: (bytes: Buffer) => CheckRequestMessage): AuthorizationServiceDefinition {
  return { ...AUTHORIZATION_SERVICE, Check: { ...AUTHORIZATION_SERVICE.Check, requestDeserialize: readRequest } };
}

export const encodeCheckResponse: (response: CheckResponseMessage) => Buffer = loaded.encode;
