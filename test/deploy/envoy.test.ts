import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BOOTSTRAP_TYPE, bootstrapParts, envoySchema, http2Options } from './envoy-bootstrap.js';
import { join } from 'node:path';
import { DEPLOY_DIR, ENVOY_BOOTSTRAP, readYaml } from './manifests.js';

type Json = Record<string, any>;

const bootstrap = readYaml(ENVOY_BOOTSTRAP) as Json;
const copy = (): Json => structuredClone(bootstrap);

describe('deploy/envoy/envoy.yaml against Envoy\'s bootstrap protos', () => {
  it('is a valid envoy.config.bootstrap.v3.Bootstrap, every typed_config checked as its @type', () => {
    assert.deepEqual(envoySchema.validate(BOOTSTRAP_TYPE, bootstrap), []);
  });

  // Each mistake planted in a copy must be caught, naming where it is.
  const planted: Array<[string, (config: Json) => void, RegExp]> = [
    ['a misspelt top-level field', (c) => ((c.static_resource = c.static_resources), delete c.static_resources), /\$\.static_resource: .*Bootstrap has no field "static_resource"; did you mean static_resources/],
    ['a misspelt field inside the ext_authz typed_config', (c) => {
      const { extAuthz } = bootstrapParts(c);
      extAuthz.failure_mode_alow = extAuthz.failure_mode_allow;
      delete extAuthz.failure_mode_allow;
    }, /ExtAuthz has no field "failure_mode_alow"/],
    ['a misspelt field in a per-route typed_per_filter_config (an Any inside an Any)', (c) => {
      const route = bootstrapParts(c).connectionManager.route_config.virtual_hosts[0].routes[0];
      const settings = route.typed_per_filter_config['envoy.filters.http.ext_authz'].check_settings;
      settings.context_extension = settings.context_extensions;
      delete settings.context_extensions;
    }, /typed_per_filter_config\.envoy\.filters\.http\.ext_authz\.check_settings\.context_extension: .*CheckSettings has no field/],
    ['an enum value that does not exist', (c) => (bootstrapParts(c).extAuthz.transport_api_version = 'V4'), /transport_api_version: "V4" is not one of AUTO, V2, V3/],
    ['a malformed duration', (c) => (bootstrapParts(c).extAuthz.grpc_service.timeout = '250ms'), /grpc_service\.timeout: expected a duration/],
    ['an @type that names no message', (c) => (bootstrapParts(c).extAuthz['@type'] += 'z'), /no message type envoy\.extensions\.filters\.http\.ext_authz\.v3\.ExtAuthzz/],
    ['a negative number for a uint32', (c) => (bootstrapParts(c).listener.address.socket_address.port_value = -1), /port_value: expected a non-negative number/],
    ['a string for a bool', (c) => (bootstrapParts(c).extAuthz.failure_mode_allow = 'false'), /failure_mode_allow: expected true or false/],
    ['a single value for a repeated field', (c) => (bootstrapParts(c).connectionManager.route_config.virtual_hosts[0].domains = '*'), /domains: expected a list/],
    ['two members of one oneof', (c) => (bootstrapParts(c).connectionManager.route_config.virtual_hosts[0].routes[1].direct_response = { status: 404 }), /at most one of action \(route, direct_response\)/],
    ['a required field left out (validate.rules)', (c) => delete bootstrapParts(c).authzCluster.health_checks[0].interval, /interval is required in envoy\.config\.core\.v3\.HealthCheck/],
    ['a value below a validate.rules bound', (c) => (bootstrapParts(c).extAuthz.with_request_body.max_request_bytes = 0), /max_request_bytes: must be greater than 0/],
    ['a deprecated field', (c) => (bootstrapParts(c).authzCluster.http2_protocol_options = {}), /http2_protocol_options is deprecated/],
    ['an empty value', (c) => (bootstrapParts(c).extAuthz.with_request_body = null), /with_request_body: empty value/],
  ];
  for (const [mistake, plant, expected] of planted) {
    it(`catches ${mistake}`, () => {
      const config = copy();
      plant(config);
      const problems = envoySchema.validate(BOOTSTRAP_TYPE, config);
      assert.ok(problems.some((problem) => expected.test(problem)), `expected ${expected}, got:\n${problems.join('\n')}`);
    });
  }

  it('accepts lowerCamel JSON names, as Envoy does', () => {
    const config = copy();
    const { extAuthz } = bootstrapParts(config);
    extAuthz.failureModeAllow = extAuthz.failure_mode_allow;
    delete extAuthz.failure_mode_allow;
    assert.deepEqual(envoySchema.validate(BOOTSTRAP_TYPE, config), []);
  });
});

const SDS_FILE = join(DEPLOY_DIR, 'envoy', 'sitekey-authz-tls-sds.yaml');

describe('deploy/envoy/sitekey-authz-tls-sds.yaml against Envoy\'s protos', () => {
  it('is a valid envoy.service.discovery.v3.DiscoveryResponse of TLS Secrets', () => {
    assert.deepEqual(envoySchema.validate('envoy.service.discovery.v3.DiscoveryResponse', readYaml(SDS_FILE)), []);
  });

  it('catches a misspelt field in a Secret', () => {
    const sds = structuredClone(readYaml(SDS_FILE)) as Json;
    sds.resources[0].tls_certificate.watched_directorys = sds.resources[0].tls_certificate.watched_directory;
    assert.ok(envoySchema.validate('envoy.service.discovery.v3.DiscoveryResponse', sds).some((problem) => /has no field "watched_directorys"/.test(problem)));
  });
});

const JWT_AUTHN = readYaml(join(DEPLOY_DIR, 'envoy', 'jwt-authn.yaml')) as Json;

/** envoy.yaml with the optional jwt_authn filter (before ext_authz) and its JWKS cluster, as docs/deployment.md, "Tokens at the edge", says to add them. */
function withJwtAuthn(): Json {
  const config = copy();
  const filters: Json[] = bootstrapParts(config).connectionManager.http_filters;
  filters.splice(filters.findIndex((filter) => filter.name === 'envoy.filters.http.ext_authz'), 0, structuredClone(JWT_AUTHN.http_filter));
  config.static_resources.clusters.push(structuredClone(JWT_AUTHN.cluster));
  return config;
}

describe('deploy/envoy/jwt-authn.yaml, the optional token filter', () => {
  it('makes, in envoy.yaml before ext_authz, a valid bootstrap', () => {
    const config = withJwtAuthn();
    assert.deepEqual(envoySchema.validate(BOOTSTRAP_TYPE, config), []);
    const names: string[] = bootstrapParts(config).connectionManager.http_filters.map((filter: Json) => filter.name);
    assert.deepEqual(names, ['envoy.filters.http.health_check', 'envoy.filters.http.jwt_authn', 'envoy.filters.http.ext_authz', 'envoy.filters.http.router']);
  });

  it('catches a misspelt provider field in it', () => {
    const config = withJwtAuthn();
    const provider = bootstrapParts(config).connectionManager.http_filters[1].typed_config.providers.partner_tokens;
    provider.audience = provider.audiences;
    delete provider.audiences;
    assert.ok(envoySchema.validate(BOOTSTRAP_TYPE, config).some((problem) => /JwtProvider has no field "audience"/.test(problem)));
  });

  it('forwards the token to the service, refuses only a token that fails, and fetches keys from a cluster that exists', () => {
    const { providers, rules } = JWT_AUTHN.http_filter.typed_config;
    const provider = providers.partner_tokens;
    assert.equal(provider.forward, true, 'the service still sees Authorization and verifies the token itself');
    assert.deepEqual(rules[0].requires.requires_any.requirements, [{ provider_name: 'partner_tokens' }, { allow_missing: {} }]);
    assert.equal(provider.remote_jwks.http_uri.cluster, JWT_AUTHN.cluster.name);
  });
});

describe('deploy/envoy/envoy.yaml does what the service needs', () => {
  const { connectionManager, extAuthz, authzCluster } = bootstrapParts(bootstrap);

  it('calls the service over gRPC v3, fails closed with 503 and sends the whole body as bytes', () => {
    assert.equal(extAuthz.transport_api_version, 'V3');
    assert.equal(extAuthz.failure_mode_allow, false);
    assert.deepEqual(extAuthz.status_on_error, { code: 'ServiceUnavailable' });
    assert.equal(extAuthz.with_request_body.allow_partial_message, false);
    assert.equal(extAuthz.with_request_body.pack_as_bytes, true);
    assert.ok(extAuthz.grpc_service.timeout, 'an explicit timeout');
  });

  it('opts a body-less route out of the body rule with a context extension, and only that one', () => {
    const routes: Json[] = connectionManager.route_config.virtual_hosts.flatMap((host: Json) => host.routes);
    const optedOut = routes.filter((route) => route.typed_per_filter_config?.['envoy.filters.http.ext_authz']?.check_settings?.context_extensions?.body_credentials === 'optional');
    assert.equal(optedOut.length, 1);
    assert.deepEqual(optedOut[0]!.match.headers, [{ name: ':method', string_match: { exact: 'GET' } }]);
  });

  it('reaches the service over HTTP/2 with active gRPC health checks of the Authorization service', () => {
    assert.ok(http2Options(authzCluster), 'explicit HTTP/2');
    assert.equal(authzCluster.health_checks[0].grpc_health_check.service_name, 'envoy.service.auth.v3.Authorization');
  });

  it('logs the site id and key id from the ext_authz dynamic metadata', () => {
    const format = connectionManager.access_log[0].typed_config.log_format.json_format;
    assert.equal(format.site_id, '%DYNAMIC_METADATA(envoy.filters.http.ext_authz:site_id)%');
    assert.equal(format.key_id, '%DYNAMIC_METADATA(envoy.filters.http.ext_authz:key_id)%');
    const filterNames = connectionManager.http_filters.map((filter: Json) => filter.name);
    assert.ok(filterNames.includes('envoy.filters.http.ext_authz'), 'the metadata namespace is the filter\'s name');
  });

  it('calls the service over mutual TLS, with certificates from file-based SDS that watches the mounted Secret', () => {
    const tls = authzCluster.transport_socket.typed_config;
    assert.equal(tls['@type'], 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext');
    assert.deepEqual(tls.common_tls_context.alpn_protocols, ['h2']);
    const address = authzCluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address;
    assert.equal(tls.sni, address, 'SNI is the name Envoy calls');
    assert.deepEqual(tls.common_tls_context.combined_validation_context.default_validation_context.match_typed_subject_alt_names, [{ san_type: 'DNS', matcher: { exact: address } }]);
    const sdsFile = tls.common_tls_context.tls_certificate_sds_secret_configs[0].sds_config.path_config_source.path as string;
    assert.equal(sdsFile, '/etc/envoy/sitekey-authz-tls-sds.yaml', 'the SDS file in the ConfigMap mounted at /etc/envoy');
    const secrets = (readYaml(SDS_FILE) as Json).resources as Json[];
    const names = [tls.common_tls_context.tls_certificate_sds_secret_configs[0].name, tls.common_tls_context.combined_validation_context.validation_context_sds_secret_config.name];
    assert.deepEqual(secrets.map((secret) => secret.name), names, 'every secret the cluster names is in the SDS file');
    for (const secret of secrets) assert.equal((secret.tls_certificate ?? secret.validation_context).watched_directory.path, '/etc/sitekey-authz-tls', 'reloaded when kubelet swaps the Secret');
  });

  it('runs the router last and the health check before ext_authz', () => {
    const filterNames: string[] = connectionManager.http_filters.map((filter: Json) => filter.name);
    assert.deepEqual(filterNames, ['envoy.filters.http.health_check', 'envoy.filters.http.ext_authz', 'envoy.filters.http.router']);
  });
});
