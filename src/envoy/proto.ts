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

/** The Authorization service as both the server (Check handler) and the client script use it. */
export interface AuthorizationServiceDefinition extends ServiceDefinition {
  readonly Check: MethodDefinition<CheckRequestMessage, CheckResponseMessage>;
}

function loadAuthorizationService(): AuthorizationServiceDefinition {
  const definition = loadSync(AUTHORIZATION_PROTO_FILE, { ...PROTO_LOADER_OPTIONS, includeDirs: [PROTO_DIR] });
  const service = definition[AUTHORIZATION_SERVICE_NAME] as Record<string, MethodDefinition<object, object>> | undefined;
  const check = service?.['Check'];
  if (check === undefined || check.path !== `/${AUTHORIZATION_SERVICE_NAME}/Check`) {
    throw new Error(`${AUTHORIZATION_PROTO_FILE} under ${PROTO_DIR} does not define ${AUTHORIZATION_SERVICE_NAME}/Check`);
  }
  return service as unknown as AuthorizationServiceDefinition;
}

/** Loaded once, at import, from the project's own proto/ (never from Envoy's upstream tree). */
export const AUTHORIZATION_SERVICE: AuthorizationServiceDefinition = loadAuthorizationService();
