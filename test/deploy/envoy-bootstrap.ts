import { UPSTREAM_INCLUDE_DIRS } from '../support/envoy-client.js';
import { ProtoJsonSchema } from './proto-json.js';

/** Envoy's upstream API (shipped in @grpc/grpc-js-xds), read as Envoy reads a YAML bootstrap. */
export const envoySchema = new ProtoJsonSchema(UPSTREAM_INCLUDE_DIRS);
export const BOOTSTRAP_TYPE = 'envoy.config.bootstrap.v3.Bootstrap';

type Json = Record<string, any>;

/** The parts of deploy/envoy/envoy.yaml that the tests look at, found by name and @type. */
export interface BootstrapParts {
  readonly connectionManager: Json;
  readonly extAuthz: Json;
  readonly authzCluster: Json;
  readonly listener: Json;
}

const HCM = 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
const EXT_AUTHZ = 'type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz';

export function bootstrapParts(bootstrap: Json): BootstrapParts {
  const listeners: Json[] = bootstrap.static_resources?.listeners ?? [];
  for (const listener of listeners) {
    for (const chain of listener.filter_chains ?? []) {
      const manager = (chain.filters ?? []).find((filter: Json) => filter.typed_config?.['@type'] === HCM)?.typed_config;
      const extAuthz = manager?.http_filters?.find((filter: Json) => filter.typed_config?.['@type'] === EXT_AUTHZ)?.typed_config;
      if (manager === undefined || extAuthz === undefined) continue;
      const clusterName = extAuthz.grpc_service?.envoy_grpc?.cluster_name;
      const authzCluster = (bootstrap.static_resources?.clusters ?? []).find((cluster: Json) => cluster.name === clusterName);
      if (authzCluster === undefined) throw new Error(`no cluster named ${clusterName} for the ext_authz filter`);
      return { connectionManager: manager, extAuthz, authzCluster, listener };
    }
  }
  throw new Error('no listener with an HTTP connection manager that runs the ext_authz filter');
}

/** The HTTP/2 options of a cluster's HttpProtocolOptions (explicit_http_config). */
export function http2Options(cluster: Json): Json | undefined {
  return cluster.typed_extension_protocol_options?.['envoy.extensions.upstreams.http.v3.HttpProtocolOptions']?.explicit_http_config
    ?.http2_protocol_options;
}
