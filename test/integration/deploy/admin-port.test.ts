import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../../src/config.js';
import { BASE_DIR, DEPLOY_DIR, findKustomize, KUSTOMIZATIONS, readEnvFile, render, type KubernetesObject } from '../../deploy/manifests.js';

type Json = Record<string, any>;

const kustomize = findKustomize();
const noKustomize = kustomize === undefined ? 'neither `kubectl kustomize` (kustomize v4+) nor `kustomize` is installed' : false;
const COMPONENT = join(DEPLOY_DIR, 'kubernetes', 'components', 'admin-api');
const ADMIN_EXAMPLE = 'examples/admin-internal-ingress';

const renders = new Map<string, KubernetesObject[]>();
function rendered(dir: string): KubernetesObject[] {
  if (!renders.has(dir)) renders.set(dir, render(kustomize!, join(DEPLOY_DIR, 'kubernetes', dir)));
  return renders.get(dir)!;
}

const named = (objects: KubernetesObject[], kind: string, name: string): Json => {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  assert.ok(found, `no ${kind} ${name}`);
  return found as Json;
};

const settings = { ...readEnvFile(join(BASE_DIR, 'settings.env')), ...readEnvFile(join(COMPONENT, 'admin-settings.env')) };

describe('the admin port in the deployment', () => {
  it("takes settings loadConfig accepts, on the port the pods and the admin Service name", () => {
    const admin = loadConfig(settings).admin;
    assert.ok(admin, 'ADMIN_ISSUER is set');
    assert.equal(admin.port, 9465);
    assert.match(admin.publicUrl, /^https:\/\//, 'the console is reached over https');
  });

  it('has its own Service, on the admin port alone, and the pods carry that port', { skip: noKustomize }, () => {
    const objects = rendered(ADMIN_EXAMPLE);
    const service = named(objects, 'Service', 'sitekey-authz-admin');
    assert.deepEqual(service.spec.ports.map((port: Json) => [port.name, port.port, port.targetPort]), [['admin', 9465, 'admin']]);
    const container = named(objects, 'Deployment', 'sitekey-authz').spec.template.spec.containers[0];
    assert.equal(container.ports.find((port: Json) => port.name === 'admin')?.containerPort, loadConfig(settings).admin?.port);
  });

  it('admits the admin port from the internal ingress controller only', { skip: noKustomize }, () => {
    const objects = rendered(ADMIN_EXAMPLE);
    const policies = objects.filter((object) => object.kind === 'NetworkPolicy' && object.metadata.namespace === 'sitekey-authz') as Json[];
    const admitting = policies.flatMap((policy) =>
      ((policy.spec.ingress ?? []) as Json[])
        .filter((rule) => ((rule.ports ?? []) as Json[]).some((port) => port.port === 'admin' || port.port === 9465) || rule.ports === undefined)
        .map((rule) => ({ policy: policy.metadata.name, from: rule.from })),
    );
    assert.deepEqual(admitting, [
      {
        policy: 'sitekey-authz-admin',
        from: [
          { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'internal-ingress' } } },
        ],
      },
    ]);
    const ingress = named(objects, 'Ingress', 'sitekey-authz-admin');
    assert.equal(ingress.spec.ingressClassName, 'internal');
  });

  for (const dir of KUSTOMIZATIONS) {
    it(`is routed by nothing in ${dir} but the internal Ingress, and the partner-facing Service never carries it`, { skip: noKustomize }, () => {
      const objects = rendered(dir);
      const partnerService = objects.find((object) => object.kind === 'Service' && object.metadata.name === 'sitekey-authz') as Json | undefined;
      if (partnerService !== undefined) {
        assert.deepEqual(partnerService.spec.ports.filter((port: Json) => port.port === 9465 || port.targetPort === 'admin' || port.targetPort === 9465), []);
      }
      const mentions = objects
        .filter((object) => !(object.kind === 'Service' && object.metadata.name === 'sitekey-authz-admin'))
        .filter((object) => !(object.kind === 'Deployment' && object.metadata.name === 'sitekey-authz'))
        .filter((object) => !(object.kind === 'ConfigMap' && object.metadata.name.startsWith('sitekey-authz-config')))
        .filter((object) => /sitekey-authz-admin\b|\b9465\b/.test(JSON.stringify(object)))
        .map((object) => `${object.kind} ${object.metadata.namespace ?? ''}/${object.metadata.name}`);
      const allowed = dir === ADMIN_EXAMPLE ? ['Ingress sitekey-authz/sitekey-authz-admin', 'NetworkPolicy sitekey-authz/sitekey-authz-admin'] : [];
      assert.deepEqual(mentions, allowed);
    });
  }

  it("is in no Envoy configuration: the partner gateway's clusters reach the Check port only", () => {
    for (const file of ['envoy.yaml', 'front-proxy.yaml']) {
      const text = readFileSync(join(DEPLOY_DIR, 'envoy', file), 'utf8');
      assert.doesNotMatch(text, /\b9465\b|sitekey-authz-admin|\/api\/v1/, file);
    }
  });
});
