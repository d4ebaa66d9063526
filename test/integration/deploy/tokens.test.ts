import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../../src/config.js';
import { BASE_DIR, DEPLOY_DIR, findKustomize, readEnvFile, render, yamlDocuments, type KubernetesObject } from '../../deploy/manifests.js';

type Json = Record<string, any>;

const kustomize = findKustomize();
const noKustomize = kustomize === undefined ? 'neither `kubectl kustomize` (kustomize v4+) nor `kustomize` is installed' : false;
const COMPONENT = join(DEPLOY_DIR, 'kubernetes', 'components', 'tokens');
const EXAMPLE = join(DEPLOY_DIR, 'kubernetes', 'examples', 'tokens');
/** Who components/issuer admits to the product issuer (`sitekey-authz issuer`): the gateway its https address leads to. */
const ISSUER_POLICY = join(DEPLOY_DIR, 'kubernetes', 'components', 'issuer', 'issuer-network-policy.yaml');

const componentObjects = (file: string): Json[] => yamlDocuments(readFileSync(join(COMPONENT, file), 'utf8')) as Json[];
const settings = { ...readEnvFile(join(BASE_DIR, 'settings.env')), ...readEnvFile(join(COMPONENT, 'token-settings.env')) };

let rendering: KubernetesObject[] | undefined;
const rendered = (): KubernetesObject[] => (rendering ??= render(kustomize!, EXAMPLE));
const named = (kind: string, name: string): Json => {
  const found = rendered().find((object) => object.kind === kind && object.metadata.name.startsWith(name));
  assert.ok(found, `no ${kind} ${name} in the render`);
  return found as Json;
};

const selects = (selector: Json, labels: Record<string, string>): boolean => Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value);

/** The egress rules of every NetworkPolicy that governs the pod's egress: NetworkPolicies add up. */
function egressRulesFor(objects: readonly KubernetesObject[], namespace: string, labels: Record<string, string>): Json[] {
  return (objects as readonly Json[])
    .filter((object) => object.kind === 'NetworkPolicy' && object.metadata.namespace === namespace)
    .filter((policy) => (policy.spec.policyTypes as string[]).includes('Egress') && selects(policy.spec.podSelector, labels))
    .flatMap((policy) => (policy.spec.egress ?? []) as Json[]);
}

describe('the tokens component turns token-based authentication on', () => {
  const work = mkdtempSync(join(tmpdir(), 'sitekey-authz-tokens-'));
  after(() => rmSync(work, { recursive: true, force: true }));

  it('sets settings loadConfig accepts with the base, with the registration token from the file the pods mount', () => {
    const [patch] = componentObjects('deployment-token-registration.yaml');
    const variable = (patch!.spec.template.spec.containers[0].env as Json[]).find((entry) => entry.name === 'TOKEN_REGISTRATION_TOKEN_FILE');
    assert.ok(variable, 'TOKEN_REGISTRATION_TOKEN_FILE is set on the container, beside its mount');
    const token = join(work, 'token');
    writeFileSync(token, 'an-initial-access-token-of-the-issuer\n');
    const config = loadConfig({ ...settings, TOKEN_REGISTRATION_TOKEN_FILE: token });
    assert.equal(config.tokens?.issuer, settings.TOKEN_ISSUER);
    assert.equal(config.tokens?.audience, settings.TOKEN_AUDIENCE);
    assert.equal(config.migrationGuideUrl, settings.MIGRATION_GUIDE_URL, 'every API-key response links the guide');
  });

  it('leaves the keys to discovery from TOKEN_ISSUER, and holds placeholders that say they are to be replaced', () => {
    assert.equal(settings.TOKEN_JWKS_URL, undefined);
    for (const name of ['TOKEN_ISSUER', 'TOKEN_AUDIENCE', 'MIGRATION_GUIDE_URL']) assert.match(settings[name] ?? '', /^https:\/\/[a-z.-]*example\.com\b/, name);
  });

  it('lets its pods reach, over https, the gateway that components/issuer admits to the issuer, as it stands', () => {
    const [egress] = componentObjects('issuer-network-policy.yaml');
    const [ingress] = yamlDocuments(readFileSync(ISSUER_POLICY, 'utf8')) as Json[];
    const admitted = (ingress!.spec.ingress as Json[]).flatMap((rule) => rule.from as Json[]);
    assert.ok(admitted.length > 0);
    for (const peer of admitted) {
      const rules = (egress!.spec.egress as Json[]).filter((rule) => (rule.to as Json[]).some((to) => JSON.stringify(to) === JSON.stringify(peer)));
      assert.ok(rules.flatMap((rule) => (rule.ports as Json[]).map((port) => port.port)).includes(443), `egress to ${JSON.stringify(peer)} on 443`);
    }
  });

  it('renders pods that mount the registration Secret, whole and not optional, and name its file', { skip: noKustomize }, () => {
    const pod = named('Deployment', 'sitekey-authz').spec.template.spec;
    const container = pod.containers[0];
    const file = (container.env as Json[]).find((entry) => entry.name === 'TOKEN_REGISTRATION_TOKEN_FILE')?.value as string;
    const mount = (container.volumeMounts as Json[]).find((entry) => entry.mountPath === dirname(file));
    assert.ok(mount, `${file} is in a mounted volume`);
    assert.equal(mount.subPath, undefined, 'no subPath: it would never see a new token');
    const secret = (pod.volumes as Json[]).find((volume) => volume.name === mount.name)?.secret;
    assert.equal(secret?.secretName, 'sitekey-authz-token-registration');
    assert.notEqual(secret?.optional, true, 'serve reads the file at start');
    assert.ok(!rendered().some((object) => object.kind === 'Secret'), 'the operator creates the Secret; no manifest holds it');
    const config = named('ConfigMap', 'sitekey-authz-config').data;
    assert.ok(config.TOKEN_ISSUER && config.TOKEN_AUDIENCE && config.MIGRATION_GUIDE_URL, 'the settings reach the ConfigMap');
  });

  it('renders pods whose egress, all policies together, reaches the issuer over HTTPS, and still DNS and PostgreSQL', { skip: noKustomize }, () => {
    const objects = rendered();
    const deployment = named('Deployment', 'sitekey-authz');
    const rules = egressRulesFor(objects, deployment.metadata.namespace, deployment.spec.template.metadata.labels);
    const reaches = (port: number) => rules.filter((rule) => (rule.ports as Json[]).some((entry) => entry.port === port));
    const https = reaches(443);
    assert.ok(https.length > 0, 'a rule for 443');
    for (const rule of https) for (const peer of rule.to as Json[]) assert.ok(peer.ipBlock?.cidr, 'to the issuer\'s addresses, not to everyone');
    assert.ok(reaches(53).length > 0 && reaches(5432).length > 0, 'the base policy still applies');
    const job = named('Job', 'sitekey-authz-migrate').spec.template.spec.containers[0];
    assert.ok(!((job.env ?? []) as Json[]).some((entry) => entry.name.startsWith('TOKEN_')), 'the migration Job needs no issuer');
  });
});
