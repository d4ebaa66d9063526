import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig, type Config } from '../../src/config.js';
import { GRPC_LIMITS, grpcServerOptions } from '../../src/envoy/grpc-server.js';
import { bootstrapParts, http2Options } from './envoy-bootstrap.js';
import { BASE_DIR, DEPLOY_DIR, ENVOY_BOOTSTRAP, ISTIOD_VALUES, readEnvFile, readYaml, yamlDocuments } from './manifests.js';
import { podLimits } from './pod-limits.js';
import { parseDuration } from './proto-json.js';
import { readFileSync } from 'node:fs';

type Json = Record<string, any>;

/**
 * The settings that must agree across files, each read from where it lives: the service's limits
 * from its own code (loadConfig over the ConfigMap's values, GRPC_SERVER_OPTIONS), Envoy's from
 * deploy/envoy/envoy.yaml, Istio's from the mesh config, the pod's from the base manifests.
 */
const settings = readEnvFile(join(BASE_DIR, 'settings.env'));
/** The gRPC server's options as serve builds them from the ConfigMap's settings. */
const GRPC_SERVER_OPTIONS = grpcServerOptions(GRPC_LIMITS, loadConfig(settings).maxBodyBytes) as Record<string, unknown>;

/** The names loadConfig looks up when reading an environment: those it knows. */
function namesLoadConfigReads(env: Record<string, string>): Set<string> {
  const read = new Set<string>();
  loadConfig(new Proxy(env, { get: (target, name) => (typeof name === 'string' && read.add(name), Reflect.get(target, name)) }));
  return read;
}

const service: Config & { readonly maxBodyBytes?: number } = loadConfig(settings);
const baseObjects = (file: string): Json[] => yamlDocuments(readFileSync(join(BASE_DIR, file), 'utf8')) as Json[];
const deployment = baseObjects('deployment.yaml')[0]!;
const container = deployment.spec.template.spec.containers[0];
const serviceObject = baseObjects('service.yaml')[0]!;
const namespace = (readYaml(join(BASE_DIR, 'kustomization.yaml')) as Json).namespace as string;
const envoy = bootstrapParts(readYaml(ENVOY_BOOTSTRAP) as Json);
const istio = ((readYaml(ISTIOD_VALUES) as Json).meshConfig.extensionProviders as Json[]).find((provider) => provider.name === 'sitekey-authz')!;
const istioGrpc = istio.envoyExtAuthzGrpc;

function containerPort(name: string | number): number {
  if (typeof name === 'number') return name;
  const port = container.ports.find((entry: Json) => entry.name === name);
  assert.ok(port, `no container port named ${name}`);
  return port.containerPort;
}

describe('the ConfigMap holds only settings the service reads', () => {
  it('loadConfig accepts every value', () => {
    assert.doesNotThrow(() => loadConfig(settings));
  });

  it('every name is one loadConfig reads', () => {
    const known = namesLoadConfigReads(settings);
    assert.deepEqual(Object.keys(settings).filter((name) => !known.has(name)), []);
  });

  it('tells a name loadConfig does not read (the check itself can fail)', () => {
    const known = namesLoadConfigReads({ ...settings, SHUTDOWN_GRACE: '20' });
    assert.equal(known.has('SHUTDOWN_GRACE'), false);
    assert.equal(known.has('SHUTDOWN_GRACE_SECONDS'), true);
  });

  it('every variable of the container is one loadConfig or Node itself reads, DATABASE_URL from a Secret', () => {
    const known = namesLoadConfigReads(settings);
    const names: string[] = container.env.map((variable: Json) => variable.name);
    assert.deepEqual(names.filter((name) => !known.has(name) && name !== 'NODE_OPTIONS'), []);
    assert.equal(settings.DATABASE_URL, undefined, 'never in the ConfigMap');
  });

  it("bounds V8's heap well under the container's memory limit, so that it collects before the kernel kills the pod", () => {
    const { memoryLimitBytes, nodeOptions } = podLimits();
    const heapMiB = Number(/^--max-old-space-size=(\d+)$/.exec(nodeOptions.find((option) => option.startsWith('--max-old-space-size=')) ?? '')?.[1]);
    const limitMiB = memoryLimitBytes / 2 ** 20;
    assert.ok(heapMiB > 0 && heapMiB <= limitMiB * 0.75, `--max-old-space-size=${heapMiB} against a ${limitMiB} MiB limit`);
  });
});

describe('settings agree across the service, Kubernetes, Envoy and Istio', () => {
  it('the pod outlives the drain: terminationGracePeriodSeconds > SHUTDOWN_DELAY_SECONDS + SHUTDOWN_GRACE_SECONDS', () => {
    assert.ok(
      deployment.spec.template.spec.terminationGracePeriodSeconds > service.shutdownDelaySeconds + service.shutdownGraceSeconds,
      `${deployment.spec.template.spec.terminationGracePeriodSeconds} s vs ${service.shutdownDelaySeconds} + ${service.shutdownGraceSeconds} s`,
    );
  });

  it('Envoy stops sending checks to a draining replica before it stops answering', () => {
    const check = envoy.authzCluster.health_checks[0];
    const noticedWithin = parseDuration(check.interval) * check.unhealthy_threshold + (check.interval_jitter ? parseDuration(check.interval_jitter) : 0);
    assert.ok(service.shutdownDelaySeconds >= noticedWithin, `SHUTDOWN_DELAY_SECONDS ${service.shutdownDelaySeconds} < ${noticedWithin} s`);
    assert.ok(service.shutdownDelaySeconds >= parseDuration(envoy.authzCluster.dns_refresh_rate), 'and DNS has dropped it');
  });

  it('the probes and ports use the ports the ConfigMap sets', () => {
    assert.equal(containerPort('grpc'), service.grpcPort);
    assert.equal(containerPort('metrics'), service.metricsPort);
    assert.equal(container.readinessProbe.grpc.port, service.grpcPort);
    assert.equal(containerPort('probes'), service.probePort);
    assert.equal(containerPort(container.livenessProbe.httpGet.port), service.probePort, 'liveness on PROBE_PORT, where nothing queues ahead of it');
    assert.equal(container.livenessProbe.httpGet.path, '/healthz');
    const byName = Object.fromEntries(serviceObject.spec.ports.map((port: Json) => [port.name, port]));
    assert.equal(containerPort(byName.grpc.targetPort), service.grpcPort);
    assert.equal(containerPort(byName.metrics.targetPort), service.metricsPort);
    assert.equal(byName.grpc.appProtocol, 'grpc');
  });

  it('Envoy and Istio call the Service on its gRPC port', () => {
    const grpcPort = serviceObject.spec.ports.find((port: Json) => port.name === 'grpc').port;
    const endpoint = envoy.authzCluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;
    const headless = yamlDocuments(readFileSync(join(DEPLOY_DIR, 'kubernetes/overlays/envoy/headless-service.yaml'), 'utf8'))[0] as Json;
    assert.equal(endpoint.address, `${headless.metadata.name}.${namespace}.svc.cluster.local`);
    assert.equal(endpoint.port_value, headless.spec.ports[0].port);
    assert.equal(containerPort(headless.spec.ports[0].targetPort), service.grpcPort);
    assert.equal(istioGrpc.service, `${serviceObject.metadata.name}.${namespace}.svc.cluster.local`);
    assert.equal(istioGrpc.port, grpcPort);
  });

  it('Envoy and Istio forward the same body, whole and as bytes, within what gRPC accepts', () => {
    const body = envoy.extAuthz.with_request_body;
    assert.equal(istioGrpc.includeRequestBodyInCheck.maxRequestBytes, body.max_request_bytes);
    assert.equal(istioGrpc.includeRequestBodyInCheck.allowPartialMessage, body.allow_partial_message);
    assert.equal(istioGrpc.includeRequestBodyInCheck.packAsBytes, body.pack_as_bytes);
    assert.ok(envoy.listener.per_connection_buffer_limit_bytes >= body.max_request_bytes, 'Envoy can buffer the body it forwards');
    // The CheckRequest carries the body and the headers (Envoy's max_request_headers_kb, 60 KiB by default).
    const headerBytes = (envoy.connectionManager.max_request_headers_kb ?? 60) * 1024;
    const receivable = GRPC_SERVER_OPTIONS['grpc.max_receive_message_length'] as number;
    assert.ok(receivable >= body.max_request_bytes + headerBytes + 64 * 1024, `gRPC accepts ${receivable} bytes`);
  });

  it('Envoy forwards no more body than the service accepts (MAX_BODY_BYTES)', { skip: service.maxBodyBytes === undefined ? 'loadConfig has no maxBodyBytes in this build' : false }, () => {
    assert.equal(envoy.extAuthz.with_request_body.max_request_bytes, service.maxBodyBytes);
  });

  it('Envoy and Istio fail closed with 503 after the same timeout', () => {
    assert.equal(envoy.extAuthz.failure_mode_allow, false);
    assert.equal(istioGrpc.failOpen, false);
    assert.deepEqual(envoy.extAuthz.status_on_error, { code: 'ServiceUnavailable' });
    assert.equal(istioGrpc.statusOnError, '503');
    const timeout = parseDuration(envoy.extAuthz.grpc_service.timeout);
    assert.equal(parseDuration(istioGrpc.timeout), timeout);
    assert.ok(timeout > 0 && timeout <= 1, `near Envoy's 200 ms default, not Istio's 600 s: ${timeout} s`);
  });

  it('Envoy pings the service on the service\'s own keepalive schedule and closes idle connections first', () => {
    const keepalive = http2Options(envoy.authzCluster)!.connection_keepalive;
    assert.equal(parseDuration(keepalive.interval) * 1000, GRPC_SERVER_OPTIONS['grpc.keepalive_time_ms']);
    assert.equal(parseDuration(keepalive.timeout) * 1000, GRPC_SERVER_OPTIONS['grpc.keepalive_timeout_ms']);
    const serverIdleMs = GRPC_SERVER_OPTIONS['grpc.max_connection_idle_ms'] as number | undefined;
    const envoyIdle = envoy.authzCluster.typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'].common_http_protocol_options?.idle_timeout;
    if (serverIdleMs !== undefined) {
      assert.ok(envoyIdle !== undefined && parseDuration(envoyIdle) * 1000 < serverIdleMs, 'Envoy closes an idle connection before the service does');
    }
  });

  it('Envoy counts X-Forwarded-For as the service does (CLIENT_IP_SOURCE, XFF_TRUSTED_HOPS)', () => {
    const source = service.clientIpSource;
    if (source.kind === 'xff') {
      assert.equal(envoy.connectionManager.use_remote_address, true, 'Envoy appends the peer it saw');
      assert.equal(envoy.connectionManager.xff_num_trusted_hops ?? 0, source.trustedHops);
    } else if (source.kind === 'header') {
      assert.equal(envoy.connectionManager.use_remote_address, true, 'Envoy sets x-envoy-external-address only at the edge');
    }
  });
});
