import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { PACKAGE_ROOT } from '../../src/paths.js';

/** Where the deployment files live, and how the tests read them. */
export const DEPLOY_DIR = join(PACKAGE_ROOT, 'deploy');
export const BASE_DIR = join(DEPLOY_DIR, 'kubernetes', 'base');
export const ENVOY_BOOTSTRAP = join(DEPLOY_DIR, 'envoy', 'envoy.yaml');
export const ISTIOD_VALUES = join(DEPLOY_DIR, 'kubernetes', 'overlays', 'istio', 'istiod-values.yaml');

/** Every kustomization a user applies, relative to deploy/kubernetes. */
export const KUSTOMIZATIONS = ['overlays/istio', 'overlays/envoy', 'examples/partner-api', 'examples/partner-api-istio', 'examples/token-edge-istio', 'examples/admin-internal-ingress', 'examples/tokens', 'examples/issuer', 'examples/tokens-own-issuer'] as const;

export type KubernetesObject = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
};

export function readYaml(path: string): unknown {
  return parse(readFileSync(path, 'utf8'));
}

/** All documents of a multi-document YAML text; a syntax error in any throws. */
export function yamlDocuments(text: string): unknown[] {
  return parseAllDocuments(text).map((document) => {
    if (document.errors.length > 0) throw document.errors[0];
    return document.toJS() as unknown;
  }).filter((value) => value !== null);
}

/** A KEY=value file as kustomize's configMapGenerator `envs` reads it (# comments, blank lines). */
export function readEnvFile(path: string): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const text = line.trim();
    if (text === '' || text.startsWith('#')) continue;
    const equals = text.indexOf('=');
    if (equals <= 0) throw new Error(`${path}: not KEY=value: ${text}`);
    entries[text.slice(0, equals)] = text.slice(equals + 1);
  }
  return entries;
}

export interface Kustomize {
  readonly command: string;
  readonly args: readonly string[];
  readonly version: string;
}

/**
 * The kustomize that renders our overlays: `kubectl kustomize` (kustomize v4 or newer, for
 * `patches`, components and the like), or a standalone `kustomize`. Undefined when neither is
 * installed; the render tests then report themselves skipped, never passed.
 */
export function findKustomize(): Kustomize | undefined {
  const candidates: Array<[string, string[], string[]]> = [
    ['kubectl', ['kustomize'], ['version', '--client']],
    ['kustomize', ['build'], ['version']],
  ];
  for (const [command, args, versionArgs] of candidates) {
    const result = spawnSync(command, versionArgs, { encoding: 'utf8' });
    if (result.error !== undefined || result.status !== 0) continue;
    const version = /^(?:Kustomize Version: )?v?((\d+)\.\d+\.\d+)/m.exec(result.stdout);
    if (version === null || Number(version[2]) < 4) continue;
    return { command, args, version: version[1]! };
  }
  return undefined;
}

/** The objects `kubectl apply -k <dir>` would send, rendered by kustomize. */
export function render(kustomize: Kustomize, dir: string): KubernetesObject[] {
  const output = execFileSync(kustomize.command, [...kustomize.args, dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return yamlDocuments(output) as KubernetesObject[];
}
