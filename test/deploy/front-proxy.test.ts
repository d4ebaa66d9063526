import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BOOTSTRAP_TYPE, bootstrapParts, envoySchema } from './envoy-bootstrap.js';
import { DEPLOY_DIR, ENVOY_BOOTSTRAP, readYaml, yamlDocuments } from './manifests.js';

type Json = Record<string, any>;

const ENVOY_DIR = join(DEPLOY_DIR, 'envoy');
const bootstrap = readYaml(ENVOY_BOOTSTRAP) as Json;
const objects = yamlDocuments(readFileSync(join(ENVOY_DIR, 'front-proxy.yaml'), 'utf8')) as Json[];
const monitoring = yamlDocuments(readFileSync(join(ENVOY_DIR, 'monitoring.yaml'), 'utf8')) as Json[];
const of = (list: Json[], kind: string): Json => {
  const found = list.find((object) => object.kind === kind);
  assert.ok(found, `a ${kind}`);
  return found;
};
const deployment = of(objects, 'Deployment');
const envoy = deployment.spec.template.spec.containers[0];

describe('the Envoy front proxy is production-shaped (deploy/envoy)', () => {
  it("serves partners over TLS only, with the certificate from a mounted Secret through SDS", () => {
    const { listener } = bootstrapParts(bootstrap);
    assert.equal(listener.filter_chains.length, 1, 'no plaintext filter chain beside the TLS one');
    const tls = listener.filter_chains[0].transport_socket.typed_config;
    assert.equal(tls['@type'], 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext');
    const sdsPath = tls.common_tls_context.tls_certificate_sds_secret_configs[0].sds_config.path_config_source.path as string;
    const sds = readYaml(join(ENVOY_DIR, sdsPath.replace('/etc/envoy/', ''))) as Json;
    assert.deepEqual(envoySchema.validate('envoy.service.discovery.v3.DiscoveryResponse', sds), []);
    const mount = envoy.volumeMounts.find((entry: Json) => entry.mountPath === sds.resources[0].tls_certificate.watched_directory.path);
    assert.ok(mount, 'the watched directory is a mounted volume');
    const volume = deployment.spec.template.spec.volumes.find((entry: Json) => entry.name === mount.name);
    assert.equal(volume.secret.secretName, 'envoy-front-proxy-tls');
    const portName = envoy.ports.find((port: Json) => port.containerPort === listener.address.socket_address.port_value).name;
    assert.equal(envoy.readinessProbe.httpGet.port, portName);
    assert.equal(envoy.readinessProbe.httpGet.scheme, 'HTTPS');
  });

  it('drains before SIGTERM, which Envoy does not: health checks failed, listeners drained, then a wait within the grace period', () => {
    const script = envoy.lifecycle.preStop.exec.command.join(' ') as string;
    assert.match(script, /\/healthcheck\/fail.*\/drain_listeners\?graceful/s);
    const drainTime = Number(envoy.args[envoy.args.indexOf('--drain-time-s') + 1]);
    const wait = Number(/sleep (\d+)/.exec(script)?.[1]);
    assert.ok(wait >= drainTime, `waits (${wait} s) at least --drain-time-s (${drainTime} s)`);
    assert.ok(deployment.spec.template.spec.terminationGracePeriodSeconds > wait, 'the pod outlives the wait');
  });

  it('has a PodDisruptionBudget for its pods, a PriorityClass and an image pinned by digest', () => {
    const budget = of(objects, 'PodDisruptionBudget');
    assert.deepEqual(budget.spec.selector.matchLabels, deployment.spec.selector.matchLabels);
    assert.equal(budget.spec.maxUnavailable, 1);
    assert.ok(deployment.spec.template.spec.priorityClassName);
    assert.match(envoy.image, /@sha256:[0-9a-f]{64}$/);
  });

  it("exposes only /stats/prometheus of the admin interface, and scrapes and alerts on ext_authz's error and denied counters", () => {
    assert.equal(bootstrap.admin.address.socket_address.address, '127.0.0.1', 'the admin interface stays local');
    const metrics = (bootstrap.static_resources.listeners as Json[]).find((listener) => listener.name === 'metrics')!;
    const routes = metrics.filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].routes as Json[];
    assert.deepEqual(routes.map((route) => route.match), [{ path: '/stats/prometheus' }]);
    const port = envoy.ports.find((entry: Json) => entry.containerPort === metrics.address.socket_address.port_value);
    const monitor = of(monitoring, 'ServiceMonitor');
    assert.equal(monitor.spec.endpoints[0].port, port.name);
    assert.equal(monitor.spec.endpoints[0].path, '/stats/prometheus');
    const exprs = (of(monitoring, 'PrometheusRule').spec.groups as Json[]).flatMap((group) => group.rules as Json[]).map((rule) => rule.expr as string);
    assert.ok(exprs.some((expr) => expr.includes('envoy_http_ext_authz_error')), 'an alert on ext_authz.error');
    assert.ok(exprs.some((expr) => expr.includes('envoy_http_ext_authz_denied')), 'an alert on ext_authz.denied');
    assert.ok(exprs.every((expr) => expr.includes(`envoy_http_conn_manager_prefix="${bootstrapParts(bootstrap).connectionManager.stat_prefix}"`)), "on the partner listener's counters");
  });

  it('is still a valid bootstrap with the metrics listener', () => {
    assert.deepEqual(envoySchema.validate(BOOTSTRAP_TYPE, bootstrap), []);
  });
});
