import * as certManagerV1 from '@kubernetes-models/cert-manager/cert-manager.io/v1';
import * as istioSecurityV1 from '@kubernetes-models/istio/security.istio.io/v1';
import * as istioSecurityV1beta1 from '@kubernetes-models/istio/security.istio.io/v1beta1';
import * as istioNetworkingV1beta1 from '@kubernetes-models/istio/networking.istio.io/v1beta1';
import * as monitoringV1 from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import * as coreV1 from 'kubernetes-models/v1';
import * as appsV1 from 'kubernetes-models/apps/v1';
import * as autoscalingV2 from 'kubernetes-models/autoscaling/v2';
import * as batchV1 from 'kubernetes-models/batch/v1';
import * as networkingV1 from 'kubernetes-models/networking.k8s.io/v1';
import * as policyV1 from 'kubernetes-models/policy/v1';
import * as schedulingV1 from 'kubernetes-models/scheduling.k8s.io/v1';
import type { KubernetesObject } from './manifests.js';

interface ModelClass {
  readonly apiVersion: string;
  readonly kind: string;
  new (data: unknown): { validate(): void };
}

/** The schema of every apiVersion/kind our manifests use, from the models packages. */
const MODELS = new Map<string, ModelClass>();
for (const group of [coreV1, appsV1, autoscalingV2, batchV1, networkingV1, policyV1, schedulingV1, istioSecurityV1beta1, istioSecurityV1, istioNetworkingV1beta1, monitoringV1, certManagerV1]) {
  for (const exported of Object.values(group) as unknown[]) {
    if (typeof exported !== 'function') continue;
    const model = exported as unknown as Partial<ModelClass>;
    if (typeof model.apiVersion === 'string' && typeof model.kind === 'string') MODELS.set(`${model.apiVersion}/${model.kind}`, model as ModelClass);
  }
}

/**
 * Problems of one object against its schema, each "path: what is wrong"; none when valid.
 *
 * The models' validate() checks types, enums, formats and required fields, but the OpenAPI
 * schemas it compiles let unknown properties through, as a Kubernetes API server without
 * strict field validation would; `kubectl apply` (strict since 1.27) refuses them. So the data is
 * handed to validate() behind a Proxy that records every property name the schema's validator
 * looks up in each object; a key that the validator never asked for, in an object whose
 * properties it did look at, is a field the schema does not know. An object the validator
 * enumerates (a map such as labels) or never looks into (free-form) has no unknown keys.
 */
export function schemaProblems(object: KubernetesObject): string[] {
  const Model = MODELS.get(`${object.apiVersion}/${object.kind}`);
  if (Model === undefined) return [`${object.kind} ${object.metadata?.name}: no schema for ${object.apiVersion} ${object.kind} (add its models group)`];
  const model = new Model(structuredClone(object));
  const asked = new Map<object, Set<string>>();
  const enumerated = new Set<object>();
  const proxies = new Map<object, object>();
  const note = (target: object, key: string | symbol) => {
    if (typeof key !== 'string') return;
    let keys = asked.get(target);
    if (keys === undefined) asked.set(target, (keys = new Set()));
    keys.add(key);
  };
  const watched = <T extends object>(target: T): T => {
    let proxy = proxies.get(target);
    if (proxy === undefined) {
      proxy = new Proxy(target, {
        get(inner, key) {
          note(inner, key);
          const value = Reflect.get(inner, key) as unknown;
          return typeof value === 'object' && value !== null && Object.hasOwn(inner, key) ? watched(value) : value;
        },
        has(inner, key) {
          note(inner, key);
          return Reflect.has(inner, key);
        },
        ownKeys(inner) {
          enumerated.add(inner);
          return Reflect.ownKeys(inner);
        },
      });
      proxies.set(target, proxy);
    }
    return proxy as T;
  };
  const problems: string[] = [];
  try {
    model.validate.call(watched(model));
  } catch (error) {
    problems.push(...String((error as Error).message).split('\n').filter(Boolean).map((line) => `${object.kind} ${object.metadata?.name}: ${line}`));
  }
  const walk = (value: unknown, path: string): void => {
    if (typeof value !== 'object' || value === null) return;
    if (Array.isArray(value)) return value.forEach((item, index) => walk(item, `${path}/${index}`));
    const keys = asked.get(value);
    for (const [key, child] of Object.entries(value)) {
      if (keys !== undefined && !enumerated.has(value) && !keys.has(key)) {
        problems.push(`${object.kind} ${object.metadata?.name}: ${path}/${key} is not a field of the schema`);
      }
      walk(child, `${path}/${key}`);
    }
  };
  walk(model, '');
  return problems;
}
