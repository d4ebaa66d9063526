import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../../src/config.js';
import { loadIssuerConfig } from '../../../src/issuer/issuer-config.js';
import { BASE_DIR, DEPLOY_DIR, findKustomize, readEnvFile, render, yamlDocuments } from '../../deploy/manifests.js';

type Json = Record<string, any>;

/** The issuer component's parts agree with each other and with what `sitekey-authz issuer` reads. */
const COMPONENT = join(DEPLOY_DIR, 'kubernetes', 'components', 'issuer');
const objectsIn = (file: string): Json[] => yamlDocuments(readFileSync(join(COMPONENT, file), 'utf8')) as Json[];
const settings = readEnvFile(join(COMPONENT, 'issuer-settings.env'));
const kustomize = findKustomize();
const noKustomize = kustomize === undefined ? 'neither `kubectl kustomize` (kustomize v4+) nor `kustomize` is installed' : false;
const deployment = objectsIn('issuer-deployment.yaml')[0]!;
const pod = deployment.spec.template.spec;
const container = pod.containers[0];
const tokenFile = settings.ISSUER_REGISTRATION_TOKEN_FILE!;

describe('the issuer component', () => {
  it('has settings that the issuer accepts, with the token read from the mounted Secret', () => {
    const read: string[] = [];
    const issuer = loadIssuerConfig(settings, (path) => (read.push(path), 'bW91bnRlZC1yZWdpc3RyYXRpb24tdG9rZW4tZm9yLXRlc3Rz'));
    assert.deepEqual(read, [tokenFile]);
    assert.equal(issuer.url, 'https://auth.partner-api.example.com');
    assert.equal(issuer.registrationToken, 'bW91bnRlZC1yZWdpc3RyYXRpb24tdG9rZW4tZm9yLXRlc3Rz');
    assert.doesNotThrow(() => loadConfig({ ...readEnvFile(join(BASE_DIR, 'settings.env')), ...settings }));
    const mount = container.volumeMounts.find((volumeMount: Json) => tokenFile.startsWith(`${volumeMount.mountPath}/`));
    assert.ok(mount, `no volume is mounted where ISSUER_REGISTRATION_TOKEN_FILE (${tokenFile}) points`);
    const volume = pod.volumes.find((one: Json) => one.name === mount.name);
    assert.equal(volume.secret.secretName, 'sitekey-authz-issuer-registration');
    assert.equal(volume.secret.items[0].path, tokenFile.slice(mount.mountPath.length + 1));
  });

  it('runs `issuer` on ISSUER_PORT, probed on /healthz there, and exposes only that port', () => {
    assert.deepEqual(container.args, ['issuer']);
    assert.deepEqual(container.ports, [{ name: 'issuer', containerPort: Number(settings.ISSUER_PORT), protocol: 'TCP' }]);
    for (const probe of [container.readinessProbe, container.livenessProbe]) assert.deepEqual(probe.httpGet, { path: '/healthz', port: 'issuer' });
    const [service] = objectsIn('issuer-service.yaml');
    assert.deepEqual(service!.spec.ports.map((port: Json) => port.targetPort), ['issuer']);
    assert.deepEqual(service!.spec.selector, deployment.spec.selector.matchLabels);
  });

  it('admits callers to the issuer port only, and its disruption budget covers its pods', () => {
    const [policy] = objectsIn('issuer-network-policy.yaml');
    assert.deepEqual(policy!.spec.podSelector.matchLabels, deployment.spec.selector.matchLabels);
    assert.deepEqual(policy!.spec.ingress.flatMap((rule: Json) => rule.ports.map((port: Json) => port.port)), ['issuer']);
    const [budget] = objectsIn('issuer-pod-disruption-budget.yaml');
    assert.deepEqual(budget!.spec.selector.matchLabels, deployment.spec.selector.matchLabels);
    assert.ok(deployment.spec.replicas > budget!.spec.maxUnavailable);
  });

  it("is left out of the Istio gateway's API-key check in the examples that route its host: a token request carries no API key", { skip: noKustomize }, () => {
    const host = new URL(settings.ISSUER_URL!).host;
    for (const example of ['examples/issuer', 'examples/tokens-own-issuer']) {
      const check = (render(kustomize!, join(DEPLOY_DIR, 'kubernetes', example)) as Json[]).find((object) => object.kind === 'AuthorizationPolicy' && object.metadata.name === 'partner-api-keys');
      assert.equal(check?.spec.action, 'CUSTOM', example);
      const operations = (check!.spec.rules as Json[]).flatMap((rule: Json) => ((rule.to ?? []) as Json[]).map((to) => to.operation));
      assert.ok(operations.length > 0 && operations.every((operation) => (operation.notHosts as string[] | undefined)?.includes(host)), `${example}: the CUSTOM policy leaves ${host} out`);
    }
  });
});
