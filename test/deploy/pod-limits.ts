import { join } from 'node:path';
import { BASE_DIR, readYaml } from './manifests.js';

const DEPLOYMENT = join(BASE_DIR, 'deployment.yaml');

interface DeploymentContainer {
  readonly name: string;
  readonly env?: ReadonlyArray<{ readonly name: string; readonly value?: string }>;
  readonly resources?: { readonly limits?: { readonly memory?: string } };
}

/**
 * What serve runs with in a pod (deploy/kubernetes/base/deployment.yaml): its memory limit and Node's
 * options. The deploy tests hold them together; the abuse and resync benchmarks run serve with them.
 */
export interface PodLimits {
  readonly memoryLimitBytes: number;
  readonly nodeOptions: readonly string[];
}

const UNITS: Readonly<Record<string, number>> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 };

function quantityBytes(quantity: string): number {
  const match = /^(\d+)(Ki|Mi|Gi)$/.exec(quantity);
  if (match === null) throw new Error(`${DEPLOYMENT}: memory limit "${quantity}" is not a number of Ki, Mi or Gi`);
  return Number(match[1]) * UNITS[match[2]!]!;
}

export function podLimits(): PodLimits {
  const deployment = readYaml(DEPLOYMENT) as { spec: { template: { spec: { containers: DeploymentContainer[] } } } };
  const container = deployment.spec.template.spec.containers.find((candidate) => candidate.name === 'sitekey-authz');
  const memory = container?.resources?.limits?.memory;
  if (container === undefined || memory === undefined) throw new Error(`${DEPLOYMENT}: no sitekey-authz container with a memory limit`);
  const nodeOptions = container.env?.find((variable) => variable.name === 'NODE_OPTIONS')?.value ?? '';
  return { memoryLimitBytes: quantityBytes(memory), nodeOptions: nodeOptions.split(' ').filter((option) => option !== '') };
}
