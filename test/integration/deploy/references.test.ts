import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { loadConfig } from '../../../src/config.js';
import { promtool, WITHOUT_PROMTOOL } from '../../support/promtool.js';
import { DEPLOY_DIR, findKustomize, ISTIOD_VALUES, readYaml, render, type KubernetesObject } from '../../deploy/manifests.js';
import { OUTSIDE_WORKLOADS, referenceProblems, selectsPod, World, type PodShape } from '../../deploy/references.js';

type Json = Record<string, any>;

const kustomize = findKustomize();
const noKustomize = kustomize === undefined ? 'neither `kubectl kustomize` (kustomize v4+) nor `kustomize` is installed' : false;

/** Each overlay with the example it is meant to guard, rendered together as a user applies them. */
const DEPLOYMENTS: ReadonlyArray<{ readonly overlay: string; readonly example: string }> = [
  { overlay: 'overlays/istio', example: 'examples/partner-api-istio' },
  { overlay: 'overlays/envoy', example: 'examples/partner-api' },
  { overlay: 'examples/token-edge-istio', example: 'examples/partner-api-istio' },
  // It holds overlays/envoy itself, with the admin-api component.
  { overlay: 'examples/admin-internal-ingress', example: 'examples/partner-api' },
  // It holds overlays/envoy itself, with the tokens component.
  { overlay: 'examples/tokens', example: 'examples/partner-api' },
  // It holds overlays/istio itself, with the issuer component.
  { overlay: 'examples/issuer', example: 'examples/partner-api-istio' },
  // It holds overlays/istio itself, with the tokens and issuer components, serve reaching the issuer through the gateway.
  { overlay: 'examples/tokens-own-issuer', example: 'examples/partner-api-istio' },
];

const meshProviders = (((readYaml(ISTIOD_VALUES) as Json).meshConfig.extensionProviders as Json[]) ?? []).map((provider) => provider.name as string);

function rendered(dirs: readonly string[]): KubernetesObject[] {
  return dirs.flatMap((dir) => render(kustomize!, join(DEPLOY_DIR, 'kubernetes', dir)));
}

const renders = new Map<string, KubernetesObject[]>();
function objectsOf(overlay: string): KubernetesObject[] {
  const { example } = DEPLOYMENTS.find((deployment) => deployment.overlay === overlay)!;
  if (!renders.has(overlay)) renders.set(overlay, rendered(overlay === 'examples/token-edge-istio' ? ['overlays/istio', overlay, example] : [overlay, example]));
  return structuredClone(renders.get(overlay)!);
}

function find(objects: KubernetesObject[], kind: string, name: string): Json {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  assert.ok(found, `no ${kind} ${name} in the render`);
  return found as Json;
}

function problemsOf(objects: KubernetesObject[]): string[] {
  return referenceProblems(new World(objects, OUTSIDE_WORKLOADS, meshProviders));
}

describe('every reference in the rendered overlays resolves', { skip: noKustomize }, () => {
  for (const { overlay, example } of DEPLOYMENTS) {
    it(`${overlay} (with ${example}): selectors select, named ports exist, providers are defined`, () => {
      assert.deepEqual(problemsOf(objectsOf(overlay)), []);
    });
  }

  // Each typo that once left authentication or monitoring off with every test green, planted in
  // a copy of the render: the check must name it.
  const planted: Array<[string, string, (objects: KubernetesObject[]) => void, RegExp]> = [
    ['an AuthorizationPolicy selector that matches no workload', 'overlays/istio', (o) => (find(o, 'AuthorizationPolicy', 'partner-api-keys').spec.selector.matchLabels.istio = 'ingresgateway'), /AuthorizationPolicy istio-ingress\/partner-api-keys: selector .* selects no pod/],
    ['a provider the mesh config does not define', 'overlays/istio', (o) => (find(o, 'AuthorizationPolicy', 'partner-api-keys').spec.provider.name = 'sitekey-auth'), /provider "sitekey-auth" is not defined in the mesh config/],
    ['action DENY with a provider', 'overlays/istio', (o) => (find(o, 'AuthorizationPolicy', 'partner-api-keys').spec.action = 'DENY'), /a provider with action DENY/],
    ['action CUSTOM without a provider', 'overlays/istio', (o) => delete find(o, 'AuthorizationPolicy', 'partner-api-keys').spec.provider, /action CUSTOM without a provider/],
    ['an ALLOW principal no pod has', 'overlays/istio', (o) => (find(o, 'AuthorizationPolicy', 'partner-api-from-gateway-only').spec.rules[0].from[0].source.principals = ['cluster.local/ns/istio-ingress/sa/istio-ingress-gateway']), /principal .* is the identity of no pod/],
    ['a Service selector that matches no pod', 'overlays/istio', (o) => (find(o, 'Service', 'sitekey-authz').spec.selector['app.kubernetes.io/component'] = 'authz'), /Service sitekey-authz\/sitekey-authz: selector .* selects no pod/],
    ['a Service targetPort that names no container port', 'overlays/envoy', (o) => (find(o, 'Service', 'sitekey-authz-headless').spec.ports[0].targetPort = 'gprc'), /targetPort "gprc" is no named port/],
    ['a NetworkPolicy pod label typo', 'overlays/istio', (o) => (find(o, 'NetworkPolicy', 'sitekey-authz-check-callers').spec.ingress[0].from[0].podSelector.matchLabels.istio = 'ingress-gateway'), /NetworkPolicy sitekey-authz\/sitekey-authz-check-callers: podSelector .* selects no pod in istio-ingress/],
    ['a NetworkPolicy namespace typo', 'overlays/envoy', (o) => (find(o, 'NetworkPolicy', 'partner-api-from-front-proxy-only').spec.ingress[0].from[0].namespaceSelector.matchLabels['kubernetes.io/metadata.name'] = 'partner-egde'), /namespaceSelector .* selects no namespace/],
    ['a NetworkPolicy podSelector typo on its own pods', 'overlays/istio', (o) => (find(o, 'NetworkPolicy', 'sitekey-authz').spec.podSelector.matchLabels['app.kubernetes.io/name'] = 'sitekey-auth'), /NetworkPolicy sitekey-authz\/sitekey-authz: podSelector .* selects no pod in sitekey-authz/],
    ['a NetworkPolicy named port typo', 'overlays/envoy', (o) => (find(o, 'NetworkPolicy', 'sitekey-authz-check-callers').spec.ingress[0].ports[0].port = 'grcp'), /ingress port "grcp" is no named port/],
    ['a ServiceMonitor port typo', 'overlays/istio', (o) => (find(o, 'ServiceMonitor', 'sitekey-authz').spec.endpoints[0].port = 'metric'), /endpoint port "metric" is no port of the Services it selects/],
    ['a ServiceMonitor selector typo', 'overlays/envoy', (o) => (find(o, 'ServiceMonitor', 'sitekey-authz').spec.selector.matchLabels['app.kubernetes.io/component'] = 'authz'), /ServiceMonitor sitekey-authz\/sitekey-authz: selector .* selects no Service/],
    ['a PodDisruptionBudget selector typo', 'overlays/istio', (o) => (find(o, 'PodDisruptionBudget', 'sitekey-authz').spec.selector.matchLabels['app.kubernetes.io/name'] = 'sitekey'), /PodDisruptionBudget sitekey-authz\/sitekey-authz: selector .* selects no pod/],
    ['a HorizontalPodAutoscaler target typo', 'overlays/envoy', (o) => (find(o, 'HorizontalPodAutoscaler', 'sitekey-authz').spec.scaleTargetRef.name = 'sitekey'), /scaleTargetRef Deployment sitekey does not exist/],
    ['a DestinationRule host typo', 'overlays/istio', (o) => (find(o, 'DestinationRule', 'sitekey-authz').spec.host = 'sitekey-authz.sitekey.svc.cluster.local'), /host sitekey-authz\.sitekey\.svc\.cluster\.local is no Service/],
    ['a priorityClassName typo', 'overlays/istio', (o) => (find(o, 'Deployment', 'sitekey-authz').spec.template.spec.priorityClassName = 'partner-egde'), /Deployment sitekey-authz: priorityClassName partner-egde is no PriorityClass/],
    ['a ServiceMonitor port typo on the front proxy', 'overlays/envoy', (o) => (find(o, 'ServiceMonitor', 'envoy-front-proxy').spec.endpoints[0].port = 'metric'), /ServiceMonitor partner-edge\/envoy-front-proxy: endpoint port "metric"/],
    ['a Certificate issuer typo', 'overlays/envoy', (o) => (find(o, 'Certificate', 'sitekey-authz-tls').spec.issuerRef.name = 'sitekey-ca'), /issuerRef ClusterIssuer sitekey-ca does not exist/],
  ];
  for (const [mistake, overlay, plant, expected] of planted) {
    it(`catches ${mistake} (${overlay})`, () => {
      const objects = objectsOf(overlay);
      plant(objects);
      const problems = problemsOf(objects);
      assert.ok(problems.some((problem) => expected.test(problem)), `expected ${expected}, got:\n${problems.join('\n')}`);
    });
  }
});

describe('both overlays serve the Check port over TLS with client certificates', { skip: noKustomize }, () => {
  for (const overlay of ['overlays/istio', 'overlays/envoy']) {
    it(`${overlay}: GRPC_TLS_* name files of a mounted Secret that a Certificate writes, and readiness asks /readyz`, () => {
      const objects = objectsOf(overlay);
      const pod = find(objects, 'Deployment', 'sitekey-authz').spec.template.spec as Json;
      const container = pod.containers[0] as Json;
      const env = Object.fromEntries((container.env as Json[]).map((variable) => [variable.name, variable.value]));
      const tls = loadConfig(env).grpcTls;
      assert.ok(tls?.clientCaFile, 'TLS on, client certificates required');
      for (const file of [tls.certFile, tls.keyFile, tls.clientCaFile]) {
        const mount = (container.volumeMounts as Json[]).find((entry) => dirname(file) === entry.mountPath);
        assert.ok(mount, `${file} is in a mounted volume`);
        const secretName = (pod.volumes as Json[]).find((volume) => volume.name === mount.name)?.secret?.secretName;
        assert.ok(objects.some((object) => object.kind === 'Certificate' && (object as Json).spec.secretName === secretName && object.metadata.namespace === 'sitekey-authz'), `a Certificate writes ${secretName}`);
        assert.equal(mount.subPath, undefined, 'no subPath: it would never see a renewal');
      }
      assert.equal(container.readinessProbe.grpc, undefined, "Kubernetes' gRPC probe speaks no TLS");
      assert.equal(container.readinessProbe.httpGet.path, '/readyz');
    });
  }
});

describe('no caller reaches the partner API except through the edge that checks it', { skip: noKustomize }, () => {
  const selecting = (objects: KubernetesObject[], kind: string, pod: PodShape) =>
    objects.filter((object) => object.kind === kind && (object.metadata.namespace ?? 'default') === pod.namespace && selectsPod((object as Json).spec.selector ?? (object as Json).spec.podSelector, pod));

  it('Istio: the API takes only mutual TLS, and only from the gateway whose pods run the CUSTOM check', () => {
    const objects = objectsOf('overlays/istio');
    const world = new World(objects, OUTSIDE_WORKLOADS, meshProviders);
    const api = world.pods.filter((pod) => pod.labels.app === 'partner-api');
    assert.ok(api.length > 0, 'the partner API in the render');
    const checked = world.pods.filter((pod) => selecting(objects, 'AuthorizationPolicy', pod).some((policy) => (policy as Json).spec.action === 'CUSTOM'));
    for (const pod of api) {
      assert.ok(selecting(objects, 'PeerAuthentication', pod).some((policy) => (policy as Json).spec.mtls.mode === 'STRICT'), 'STRICT mutual TLS');
      const allows = selecting(objects, 'AuthorizationPolicy', pod).filter((policy) => ((policy as Json).spec.action ?? 'ALLOW') === 'ALLOW');
      assert.ok(allows.length > 0, 'an ALLOW policy (without one, Istio allows every caller)');
      const principals = allows.flatMap((policy) => ((policy as Json).spec.rules as Json[]).flatMap((rule) => (rule.from ?? []) as Json[]).flatMap((from) => (from.source?.principals ?? ['*']) as string[]));
      for (const principal of principals) {
        const [, namespace, account] = /^cluster\.local\/ns\/([^/]+)\/sa\/([^/]+)$/.exec(principal) ?? [];
        const callers = world.pods.filter((caller) => caller.namespace === namespace && caller.serviceAccount === account);
        assert.ok(callers.length > 0 && callers.every((caller) => checked.includes(caller)), `${principal} is a pod that runs the CUSTOM check`);
      }
    }
  });

  it('Envoy: a NetworkPolicy admits only the front proxy, which runs the ext_authz check', () => {
    const objects = objectsOf('overlays/envoy');
    const world = new World(objects, OUTSIDE_WORKLOADS, meshProviders);
    const api = world.pods.filter((pod) => pod.labels.app === 'partner-api');
    assert.ok(api.length > 0, 'the partner API in the render');
    for (const pod of api) {
      const policies = selecting(objects, 'NetworkPolicy', pod).filter((policy) => ((policy as Json).spec.policyTypes as string[]).includes('Ingress'));
      assert.ok(policies.length > 0, 'an ingress NetworkPolicy on the API');
      for (const rule of policies.flatMap((policy) => (policy as Json).spec.ingress as Json[])) {
        const peers = (rule.from ?? []) as Json[];
        assert.ok(peers.length > 0, 'no rule open to everyone');
        for (const peer of peers) {
          assert.equal(peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'], 'partner-edge');
          assert.deepEqual(peer.podSelector?.matchLabels, { 'app.kubernetes.io/name': 'envoy-front-proxy' });
        }
      }
    }
  });
});

describe('promtool checks every rule group of every rendered PrometheusRule', { skip: noKustomize || WITHOUT_PROMTOOL }, () => {
  const work = mkdtempSync(join(tmpdir(), 'sitekey-authz-rules-'));
  after(() => rmSync(work, { recursive: true, force: true }));

  /** promtool's findings for each PrometheusRule in the objects; none when all pass. */
  async function promtoolProblems(objects: KubernetesObject[]): Promise<string[]> {
    const rules = objects.filter((object) => object.kind === 'PrometheusRule');
    assert.ok(rules.length > 0, 'a PrometheusRule in the render');
    const problems: string[] = [];
    for (const rule of rules) {
      const file = join(work, `${rule.metadata.namespace}-${rule.metadata.name}.yaml`);
      writeFileSync(file, stringify({ groups: (rule as Json).spec.groups }));
      const result = await promtool(['check', 'rules', file]);
      if (result.code !== 0) problems.push(`PrometheusRule ${rule.metadata.namespace}/${rule.metadata.name}: ${result.output}`);
    }
    return problems;
  }

  for (const { overlay } of DEPLOYMENTS) {
    it(`in ${overlay}`, async () => {
      assert.deepEqual(await promtoolProblems(objectsOf(overlay)), []);
    });
  }

  it('catches a PromQL error in the alert that only the base PrometheusRule has (SitekeyAuthzDown)', async () => {
    const objects = objectsOf('overlays/envoy');
    const rule = find(objects, 'PrometheusRule', 'sitekey-authz');
    const down = (rule.spec.groups as Json[]).flatMap((group) => group.rules as Json[]).find((entry) => entry.alert === 'SitekeyAuthzDown');
    assert.ok(down, 'SitekeyAuthzDown in the rendered PrometheusRule');
    down.expr = 'up{job="sitekey-authz"} == 0 or absent(up{job="sitekey-authz"}';
    const problems = await promtoolProblems(objects);
    assert.ok(problems.some((problem) => /PrometheusRule sitekey-authz\/sitekey-authz: .*(parse error|unclosed)/s.test(problem)), problems.join('\n'));
  });
});
