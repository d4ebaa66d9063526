import assert from 'node:assert/strict';
import { PROMETHEUS_RULE, renderPrometheusRule } from '../../deploy/prometheus-rule.js';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { schemaProblems } from '../../deploy/kubernetes-schemas.js';
import {
  BASE_DIR,
  DEPLOY_DIR,
  findKustomize,
  KUSTOMIZATIONS,
  readYaml,
  render,
  yamlDocuments,
  type KubernetesObject,
} from '../../deploy/manifests.js';

type Json = Record<string, any>;

const kustomize = findKustomize();
const noKustomize = kustomize === undefined ? 'neither `kubectl kustomize` (kustomize v4+) nor `kustomize` is installed' : false;

/** The objects each file of a kustomization lists under `resources` (files, not directories). */
function resourceFiles(kustomizationDir: string): string[] {
  const kustomization = readYaml(join(kustomizationDir, 'kustomization.yaml')) as Json;
  return (kustomization.resources as string[]).map((entry) => join(kustomizationDir, entry)).filter((path) => path.endsWith('.yaml'));
}

const SOURCE_FILES = [
  BASE_DIR,
  ...KUSTOMIZATIONS.map((dir) => join(DEPLOY_DIR, 'kubernetes', dir)),
  ...readdirSync(join(DEPLOY_DIR, 'kubernetes', 'components')).map((component) => join(DEPLOY_DIR, 'kubernetes', 'components', component)),
  join(DEPLOY_DIR, 'envoy'),
].flatMap(resourceFiles);

function objectsOf(path: string): KubernetesObject[] {
  return yamlDocuments(readFileSync(path, 'utf8')) as KubernetesObject[];
}

function baseObject(kind: string): Json {
  const found = SOURCE_FILES.flatMap(objectsOf).find((object) => object.kind === kind && object.metadata.name.startsWith('sitekey-authz'));
  assert.ok(found, `no ${kind} in the base`);
  return structuredClone(found);
}

describe('Kubernetes manifests against the Kubernetes, Istio and Prometheus-operator schemas', () => {
  for (const path of SOURCE_FILES) {
    it(`every object in ${path.slice(DEPLOY_DIR.length + 1)} validates strictly`, () => {
      const objects = objectsOf(path);
      assert.ok(objects.length > 0);
      assert.deepEqual(objects.flatMap(schemaProblems), []);
    });
  }

  for (const dir of KUSTOMIZATIONS) {
    it(`kustomize renders deploy/kubernetes/${dir}, and every rendered object validates strictly`, { skip: noKustomize }, () => {
      const objects = render(kustomize!, join(DEPLOY_DIR, 'kubernetes', dir));
      assert.ok(objects.length > 0);
      assert.deepEqual(objects.flatMap(schemaProblems), []);
    });
  }

  // Each mistake planted in a copy must be caught by the schema check.
  const planted: Array<[string, string, (object: Json) => void, RegExp]> = [
    ['a misspelt field', 'Deployment', (d) => (d.spec.template.spec.containers[0].readinesProbe = d.spec.template.spec.containers[0].readinessProbe), /containers\/0\/readinesProbe is not a field/],
    ['a misspelt field deep in a pod security context', 'Deployment', (d) => (d.spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem = true), /securityContext\/readOnlyRootFileSystem is not a field/],
    ['a value of the wrong type', 'Deployment', (d) => (d.spec.template.spec.terminationGracePeriodSeconds = '35s'), /terminationGracePeriodSeconds must be (integer|number)/],
    ['a required field left out', 'Deployment', (d) => delete d.spec.template.spec.containers[0].name, /must have required property '?name'?/],
    ['a misspelt Service field', 'Service', (d) => (d.spec.ports[0].appProtocoll = 'grpc'), /ports\/0\/appProtocoll is not a field/],
    ['a count written as text', 'HorizontalPodAutoscaler', (d) => (d.spec.minReplicas = '2'), /minReplicas must be (integer|number)/],
    ['a misspelt NetworkPolicy field', 'NetworkPolicy', (d) => (d.spec.ingres = d.spec.ingress), /spec\/ingres is not a field/],
    ['a misspelt Job field', 'Job', (d) => (d.spec.ttlSecondsAfterFinish = 60), /spec\/ttlSecondsAfterFinish is not a field/],
    ['an AuthorizationPolicy action that does not exist', 'AuthorizationPolicy', (d) => (d.spec.action = 'EXTERNAL'), /action must be equal to one of the allowed values/],
    ['a misspelt AuthorizationPolicy field', 'AuthorizationPolicy', (d) => (d.spec.provder = d.spec.provider), /spec\/provder is not a field/],
    ['a misspelt PrometheusRule field', 'PrometheusRule', (d) => (d.spec.groups[0].rules[0].expresion = 'up == 0'), /rules\/0\/expresion is not a field/],
    ['a ServiceMonitor endpoint of the wrong type', 'ServiceMonitor', (d) => (d.spec.endpoints = { port: 'metrics' }), /endpoints must be array/],
  ];
  for (const [mistake, kind, plant, expected] of planted) {
    it(`catches ${mistake} (${kind})`, () => {
      const object = kind === 'AuthorizationPolicy' ? structuredClone(objectsOf(join(DEPLOY_DIR, 'kubernetes/overlays/istio/authorization-policy.yaml'))[0]!) : baseObject(kind);
      assert.deepEqual(schemaProblems(object as KubernetesObject), [], 'valid before the mistake');
      plant(object);
      const problems = schemaProblems(object as KubernetesObject);
      assert.ok(problems.some((problem) => expected.test(problem)), `expected ${expected}, got:\n${problems.join('\n')}`);
    });
  }

  it('catches an object of a kind it has no schema for, instead of passing it', () => {
    assert.match(schemaProblems({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })[0]!, /no schema for example\.com\/v1 Widget/);
  });

  describe('kustomize catches a broken kustomization', { skip: noKustomize }, () => {
    const copyDir = mkdtempSync(join(tmpdir(), 'sitekey-authz-kustomize-'));
    after(() => rmSync(copyDir, { recursive: true, force: true }));

    it('a resource file that does not exist', () => {
      cpSync(join(DEPLOY_DIR, 'kubernetes'), join(copyDir, 'kubernetes'), { recursive: true });
      const kustomization = join(copyDir, 'kubernetes', 'base', 'kustomization.yaml');
      writeFileSync(kustomization, readFileSync(kustomization, 'utf8').replace('- service.yaml', '- servise.yaml'));
      assert.throws(() => render(kustomize!, join(copyDir, 'kubernetes', 'overlays', 'istio')), /servise\.yaml/);
    });
  });
});

describe('the sitekey-authz Deployment is built for production', () => {
  const deployment = baseObject('Deployment');
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];

  it('runs at least two replicas, spread over nodes and zones', () => {
    const autoscaler = baseObject('HorizontalPodAutoscaler');
    assert.ok(autoscaler.spec.minReplicas >= 2, 'the autoscaler keeps two or more');
    assert.ok(deployment.spec.replicas === undefined || deployment.spec.replicas >= 2);
    const keys = pod.topologySpreadConstraints.map((constraint: Json) => constraint.topologyKey);
    assert.deepEqual(keys.sort(), ['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
    assert.equal(baseObject('PodDisruptionBudget').spec.maxUnavailable, 1);
  });

  it('probes readiness with native gRPC health and liveness without a shell', () => {
    assert.ok(container.readinessProbe.grpc, 'gRPC readiness probe');
    assert.ok(container.livenessProbe.httpGet ?? container.livenessProbe.grpc, 'a native liveness probe');
    for (const probe of [container.readinessProbe, container.livenessProbe]) assert.equal(probe.exec, undefined, 'no exec probe');
  });

  it('sets requests and limits', () => {
    for (const resource of ['cpu', 'memory']) {
      assert.ok(container.resources.requests[resource], `request ${resource}`);
      assert.ok(container.resources.limits[resource], `limit ${resource}`);
    }
  });

  it('runs as non-root on a read-only root filesystem, with no privilege escalation, no capabilities and seccomp', () => {
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.ok(pod.securityContext.runAsUser > 0);
    assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(container.securityContext.capabilities.drop, ['ALL']);
  });

  it('takes DATABASE_URL only from a Secret, and no manifest holds a database URL or a Secret', () => {
    const databaseUrl = container.env.find((variable: Json) => variable.name === 'DATABASE_URL');
    assert.ok(databaseUrl.valueFrom.secretKeyRef.name);
    assert.equal(databaseUrl.value, undefined);
    const everything = SOURCE_FILES.map((path) => readFileSync(path, 'utf8')).join('\n');
    assert.doesNotMatch(everything, /postgres(ql)?:\/\//);
    assert.ok(!SOURCE_FILES.flatMap(objectsOf).some((object) => object.kind === 'Secret'), 'no Secret object');
  });

  it('runs migrations in a Job with the same image and database Secret', () => {
    const job = baseObject('Job');
    const migrate = job.spec.template.spec.containers[0];
    assert.deepEqual(migrate.args, ['migrate']);
    assert.equal(migrate.image, container.image);
    assert.deepEqual(
      migrate.env.find((variable: Json) => variable.name === 'DATABASE_URL').valueFrom,
      container.env.find((variable: Json) => variable.name === 'DATABASE_URL').valueFrom,
    );
  });

  it('admits scrapes only from Prometheus, leaves the Check port to the overlays, and reaches only DNS and the named database', () => {
    const policy = baseObject('NetworkPolicy');
    assert.deepEqual(policy.spec.policyTypes, ['Ingress', 'Egress']);
    assert.deepEqual(policy.spec.ingress.map((rule: Json) => rule.ports.map((port: Json) => port.port)), [['metrics']]);
    assert.deepEqual(policy.spec.egress.map((rule: Json) => rule.ports.map((port: Json) => port.port)), [[53, 53], [5432]]);
    for (const rule of policy.spec.egress as Json[]) assert.ok(rule.to?.length > 0, 'every egress rule names where it goes');
  });

  for (const overlay of ['istio', 'envoy']) {
    it(`overlays/${overlay} admits Check calls from its proxies' namespace and pods only, never from any namespace`, () => {
      const [policy] = objectsOf(join(DEPLOY_DIR, 'kubernetes', 'overlays', overlay, 'check-callers-network-policy.yaml')) as Json[];
      const peers = (policy!.spec.ingress as Json[]).flatMap((rule) => rule.from as Json[]);
      assert.ok(peers.length > 0);
      for (const peer of peers) {
        assert.ok(peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'], 'a namespace named');
        assert.ok(Object.keys(peer.podSelector?.matchLabels ?? {}).length > 0, 'pods named');
      }
      assert.deepEqual((policy!.spec.ingress as Json[]).map((rule) => rule.ports.map((port: Json) => port.port)), [['grpc']]);
    });
  }
});

describe('the PrometheusRule carries the service\'s alert rules', () => {
  const rule = baseObject('PrometheusRule');

  it('has a SitekeyAuthzDown alert with a runbook on the ServiceMonitor\'s job', () => {
    const alert = rule.spec.groups.flatMap((group: Json) => group.rules).find((entry: Json) => entry.alert === 'SitekeyAuthzDown');
    assert.match(alert.expr, /up\{job="sitekey-authz"\}/);
    assert.ok(alert.annotations.runbook);
    assert.equal(baseObject('Service').metadata.name, 'sitekey-authz', 'the ServiceMonitor\'s job label is the Service name');
  });

  it('is rendered from deploy/observability/prometheus-rules.yaml, the one place the rules are written (make manifests)', () => {
    assert.equal(readFileSync(PROMETHEUS_RULE, 'utf8'), renderPrometheusRule(), 'deploy/kubernetes/base/prometheus-rule.yaml is stale: run `make manifests`');
  });
});
