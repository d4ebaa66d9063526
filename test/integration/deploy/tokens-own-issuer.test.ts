import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../../src/config.js';
import { loadIssuerConfig } from '../../../src/issuer/issuer-config.js';
import { DEPLOY_DIR, findKustomize, render, type KubernetesObject } from '../../deploy/manifests.js';

type Json = Record<string, any>;

const kustomize = findKustomize();
const noKustomize = kustomize === undefined ? 'neither `kubectl kustomize` (kustomize v4+) nor `kustomize` is installed' : false;
const EXAMPLE = join(DEPLOY_DIR, 'kubernetes', 'examples', 'tokens-own-issuer');
const TOKEN = 'b25lLXJlZ2lzdHJhdGlvbi10b2tlbi1mb3ItYm90aC1zaWRlcw';

let rendering: KubernetesObject[] | undefined;
const rendered = (): Json[] => (rendering ??= render(kustomize!, EXAMPLE)) as Json[];
const named = (kind: string, name: string): Json => {
  const found = rendered().find((object) => object.kind === kind && object.metadata.name === name);
  assert.ok(found, `no ${kind} ${name} in the render`);
  return found;
};
const selects = (selector: Json, labels: Record<string, string>): boolean => Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
const podOf = (name: string): Json => named('Deployment', name).spec.template;

/** The pod's settings as its container sees them: every ConfigMap it takes whole, then its own env values. */
function settingsOf(pod: Json): Record<string, string> {
  const container = pod.spec.containers[0];
  const maps = ((container.envFrom ?? []) as Json[]).map((source) => rendered().find((object) => object.kind === 'ConfigMap' && object.metadata.name === source.configMapRef.name)?.data ?? {});
  const values = ((container.env ?? []) as Json[]).filter((entry) => entry.value !== undefined).map((entry) => [entry.name, entry.value]);
  return Object.assign({}, ...maps, Object.fromEntries(values));
}

/** The Secret mounted in the directory that holds `file`. */
function secretHolding(pod: Json, file: string): string | undefined {
  const mount = (pod.spec.containers[0].volumeMounts as Json[]).find((entry) => entry.mountPath === dirname(file));
  return (pod.spec.volumes as Json[]).find((volume) => volume.name === mount?.name)?.secret?.secretName;
}

/** NetworkPolicy peers and ports of `direction` for pods with these labels, all policies together. */
function rulesFor(direction: 'ingress' | 'egress', labels: Record<string, string>): Json[] {
  const type = direction === 'ingress' ? 'Ingress' : 'Egress';
  return rendered()
    .filter((object) => object.kind === 'NetworkPolicy' && object.metadata.namespace === 'sitekey-authz')
    .filter((policy) => (policy.spec.policyTypes as string[]).includes(type) && selects(policy.spec.podSelector, labels))
    .flatMap((policy) => (policy.spec[direction] ?? []) as Json[]);
}

/**
 * examples/tokens-own-issuer: the two components meet. serve is given the issuer it runs beside, both
 * take the registration token from one Secret, and serve's https path to the issuer (the gateway, which
 * ends TLS and routes ISSUER_URL's host to the issuer's Service) is open in every NetworkPolicy on the way.
 */
describe('the tokens component with the issuer component (examples/tokens-own-issuer)', { skip: noKustomize }, () => {
  const work = mkdtempSync(join(tmpdir(), 'sitekey-authz-own-issuer-'));
  after(() => rmSync(work, { recursive: true, force: true }));

  it("gives serve the issuer's identifier and resource, as settings both sides accept", () => {
    const serve = settingsOf(podOf('sitekey-authz'));
    const issuer = settingsOf(podOf('sitekey-authz-issuer'));
    const tokenFile = join(work, 'token');
    writeFileSync(tokenFile, `${TOKEN}\n`);
    const config = loadConfig({ ...serve, TOKEN_REGISTRATION_TOKEN_FILE: tokenFile });
    const settings = loadIssuerConfig({ ...issuer, ISSUER_REGISTRATION_TOKEN_FILE: tokenFile });
    assert.equal(config.tokens?.issuer, settings.url, 'TOKEN_ISSUER is ISSUER_URL: the tokens\' iss');
    assert.equal(config.tokens?.audience, settings.resource, 'TOKEN_AUDIENCE is ISSUER_RESOURCE');
    assert.equal(config.tokens?.jwksUrl, undefined, 'the keys are discovered from the issuer');
  });

  it('mounts one Secret for the registration token on both sides', () => {
    const serve = podOf('sitekey-authz');
    const issuer = podOf('sitekey-authz-issuer');
    const serveSecret = secretHolding(serve, settingsOf(serve).TOKEN_REGISTRATION_TOKEN_FILE as string);
    const issuerSecret = secretHolding(issuer, settingsOf(issuer).ISSUER_REGISTRATION_TOKEN_FILE as string);
    assert.equal(serveSecret, 'sitekey-authz-issuer-registration');
    assert.equal(issuerSecret, serveSecret);
    assert.ok(!rendered().some((object) => object.kind === 'Secret'), 'the operator creates the Secret; no manifest holds it');
  });

  // That the host is left out of the gateway's API-key check: test/integration/deploy/issuer-component.test.ts.
  it("routes ISSUER_URL's host at the gateway to the issuer's Service, over https", () => {
    const host = new URL(settingsOf(podOf('sitekey-authz-issuer')).ISSUER_URL as string).host;
    const gateway = named('Gateway', 'sitekey-authz-issuer');
    const server = (gateway.spec.servers as Json[]).find((entry) => (entry.hosts as string[]).includes(host));
    assert.deepEqual([server?.port.number, server?.port.protocol, server?.tls.mode], [443, 'HTTPS', 'SIMPLE']);
    const route = named('VirtualService', 'sitekey-authz-issuer');
    assert.deepEqual(route.spec.hosts, [host]);
    const service = named('Service', 'sitekey-authz-issuer');
    const destination = route.spec.http[0].route[0].destination;
    assert.equal(destination.host, `${service.metadata.name}.${service.metadata.namespace}.svc.cluster.local`);
    assert.ok((service.spec.ports as Json[]).some((port) => port.port === destination.port.number));
  });

  it("opens serve's path to the issuer in every NetworkPolicy: serve → gateway on 443, gateway → the issuer's port", () => {
    const serveLabels = podOf('sitekey-authz').metadata.labels;
    const issuerLabels = podOf('sitekey-authz-issuer').metadata.labels;
    const admitted = rulesFor('ingress', issuerLabels).filter((rule) => (rule.ports as Json[]).some((port) => port.port === 'issuer'));
    const gatewayPeers = admitted.flatMap((rule) => rule.from as Json[]);
    assert.ok(gatewayPeers.length > 0, "the issuer's port admits the gateway");
    assert.ok(!gatewayPeers.some((peer) => peer.podSelector !== undefined && selects(peer.podSelector, serveLabels) && peer.namespaceSelector === undefined), 'its plain-http port is not open to serve');
    const egress = rulesFor('egress', serveLabels);
    for (const peer of gatewayPeers) {
      const ports = egress.filter((rule) => (rule.to as Json[]).some((to) => JSON.stringify(to) === JSON.stringify(peer))).flatMap((rule) => (rule.ports as Json[]).map((port) => port.port));
      assert.ok(ports.includes(443), `serve's egress reaches ${JSON.stringify(peer)} on 443`);
    }
  });
});
