import type { KubernetesObject } from './manifests.js';

type Json = Record<string, any>;
type Labels = Readonly<Record<string, string>>;

/** A pod that a workload would run: where, with which labels, service account and named ports. */
export interface PodShape {
  readonly namespace: string;
  readonly labels: Labels;
  readonly serviceAccount: string;
  readonly ports: Readonly<Record<string, number>>;
  readonly priorityClassName?: string | undefined;
  /** What makes it: "Deployment partner-api", or where an outside workload comes from. */
  readonly from: string;
}

/**
 * Workloads that the manifests refer to but do not hold, because they come from someone else's
 * chart or from the steps of docs/deployment.md, "From an empty cluster"; each says where. A reference to anything else must resolve
 * inside the render.
 */
export const OUTSIDE_WORKLOADS: readonly PodShape[] = [
  {
    namespace: 'istio-ingress',
    labels: { app: 'istio-ingressgateway', istio: 'ingressgateway' },
    serviceAccount: 'istio-ingressgateway',
    ports: { 'http-envoy-prom': 15090 },
    from: 'Helm chart istio/gateway, release istio-ingressgateway (docs/deployment.md, "From an empty cluster", step 1)',
  },
  {
    namespace: 'kube-system',
    labels: { 'k8s-app': 'kube-dns' },
    serviceAccount: 'coredns',
    ports: { dns: 53, 'dns-tcp': 53 },
    from: "the cluster's DNS",
  },
  {
    namespace: 'monitoring',
    labels: { 'app.kubernetes.io/name': 'prometheus' },
    serviceAccount: 'kube-prometheus-stack-prometheus',
    ports: { 'http-web': 9090 },
    from: 'Helm chart prometheus-community/kube-prometheus-stack (docs/deployment.md, "From an empty cluster", step 1)',
  },
  {
    namespace: 'internal-ingress',
    labels: { 'app.kubernetes.io/component': 'controller' },
    serviceAccount: 'internal-ingress-controller',
    ports: { http: 80, https: 443 },
    from: 'the organisation\'s internal ingress controller, IngressClass internal (docs/admin-api.md, "Admin API")',
  },
  {
    namespace: 'sitekey-db',
    labels: { 'app.kubernetes.io/name': 'postgres' },
    serviceAccount: 'default',
    ports: {},
    from: 'the try-out PostgreSQL of docs/deployment.md, "From an empty cluster", step 3',
  },
];

const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Job']);

function namespaceOf(object: KubernetesObject): string {
  return object.metadata.namespace ?? 'default';
}

function podsOf(objects: readonly KubernetesObject[]): PodShape[] {
  return objects
    .filter((object) => WORKLOAD_KINDS.has(object.kind))
    .map((object) => {
      const template = (object as Json).spec.template as Json;
      const ports: Record<string, number> = {};
      for (const container of template.spec.containers ?? []) {
        for (const port of container.ports ?? []) if (port.name) ports[port.name] = port.containerPort;
      }
      return {
        namespace: namespaceOf(object),
        labels: template.metadata?.labels ?? {},
        serviceAccount: template.spec.serviceAccountName ?? 'default',
        ports,
        priorityClassName: template.spec.priorityClassName,
        from: `${object.kind} ${object.metadata.name}`,
      };
    });
}

/** matchLabels (and matchExpressions In/NotIn/Exists/DoesNotExist) against labels; an empty selector matches all. */
function selects(selector: Json | undefined, labels: Labels): boolean {
  if (selector === undefined || selector === null) return true;
  const matchLabels: Labels = selector.matchLabels ?? (selector.matchExpressions === undefined ? selector : {});
  for (const [key, value] of Object.entries(matchLabels)) if (labels[key] !== value) return false;
  for (const expression of (selector.matchExpressions ?? []) as Json[]) {
    const value = labels[expression.key];
    const values: string[] = expression.values ?? [];
    const holds =
      expression.operator === 'In' ? value !== undefined && values.includes(value)
      : expression.operator === 'NotIn' ? value === undefined || !values.includes(value)
      : expression.operator === 'Exists' ? value !== undefined
      : value === undefined;
    if (!holds) return false;
  }
  return true;
}

/** Whether a label selector (matchLabels/matchExpressions) selects the pod. */
export function selectsPod(selector: Json | undefined, pod: PodShape): boolean {
  return selects(selector, pod.labels);
}

function describeSelector(selector: Json | undefined): string {
  return JSON.stringify(selector?.matchLabels ?? selector ?? {});
}

/** What a render (plus the workloads from elsewhere) holds, to resolve references against. */
export class World {
  readonly pods: readonly PodShape[];
  readonly namespaces: ReadonlyMap<string, Labels>;

  constructor(
    readonly objects: readonly KubernetesObject[],
    outside: readonly PodShape[],
    /** The extension providers Istio's mesh config defines (istiod-values.yaml). */
    readonly meshProviders: readonly string[],
  ) {
    this.pods = [...podsOf(objects), ...outside];
    const namespaces = new Map<string, Labels>();
    const add = (name: string, labels: Labels = {}) =>
      namespaces.set(name, { ...namespaces.get(name), ...labels, 'kubernetes.io/metadata.name': name });
    for (const pod of this.pods) add(pod.namespace);
    for (const object of objects) {
      if (object.kind === 'Namespace') add(object.metadata.name, (object.metadata.labels as Labels | undefined) ?? {});
      else if (object.metadata.namespace !== undefined) add(object.metadata.namespace);
    }
    this.namespaces = namespaces;
  }

  podsIn(namespace: string, selector: Json | undefined): PodShape[] {
    return this.pods.filter((pod) => pod.namespace === namespace && selects(selector, pod.labels));
  }

  all(kind: string): KubernetesObject[] {
    return this.objects.filter((object) => object.kind === kind);
  }
}

function networkPolicyProblems(world: World, policy: KubernetesObject): string[] {
  const problems: string[] = [];
  const name = `NetworkPolicy ${namespaceOf(policy)}/${policy.metadata.name}`;
  const spec = (policy as Json).spec as Json;
  const targets = world.podsIn(namespaceOf(policy), spec.podSelector);
  if (targets.length === 0) problems.push(`${name}: podSelector ${describeSelector(spec.podSelector)} selects no pod in ${namespaceOf(policy)}`);
  const peersOf = (peer: Json): PodShape[] | undefined => {
    if (peer.ipBlock !== undefined) return undefined;
    const namespaces =
      peer.namespaceSelector === undefined
        ? [namespaceOf(policy)]
        : [...world.namespaces].filter(([, labels]) => selects(peer.namespaceSelector, labels)).map(([namespace]) => namespace);
    if (namespaces.length === 0) {
      problems.push(`${name}: namespaceSelector ${describeSelector(peer.namespaceSelector)} selects no namespace`);
      return [];
    }
    const pods = namespaces.flatMap((namespace) => world.podsIn(namespace, peer.podSelector));
    if (pods.length === 0) problems.push(`${name}: podSelector ${describeSelector(peer.podSelector)} selects no pod in ${namespaces.join(', ')}`);
    return pods;
  };
  const namedPortsExist = (ports: Json[] | undefined, on: PodShape[], direction: string) => {
    for (const port of ports ?? []) {
      if (typeof port.port !== 'string' || on.length === 0) continue;
      if (!on.some((pod) => pod.ports[port.port] !== undefined)) problems.push(`${name}: ${direction} port "${port.port}" is no named port of the pods it means`);
    }
  };
  for (const rule of (spec.ingress ?? []) as Json[]) {
    for (const peer of (rule.from ?? []) as Json[]) peersOf(peer);
    namedPortsExist(rule.ports, targets, 'ingress');
  }
  for (const rule of (spec.egress ?? []) as Json[]) {
    const peers = ((rule.to ?? []) as Json[]).map(peersOf);
    // An ipBlock peer (undefined) has no pods to name ports on.
    const named = peers.every((pods) => pods !== undefined) ? (peers as PodShape[][]).flat() : [];
    namedPortsExist(rule.ports, named, 'egress');
  }
  return problems;
}

function serviceProblems(world: World, service: KubernetesObject): string[] {
  const spec = (service as Json).spec as Json;
  const name = `Service ${namespaceOf(service)}/${service.metadata.name}`;
  if (spec.selector === undefined) return [];
  const pods = world.podsIn(namespaceOf(service), { matchLabels: spec.selector });
  if (pods.length === 0) return [`${name}: selector ${JSON.stringify(spec.selector)} selects no pod`];
  return ((spec.ports ?? []) as Json[])
    .filter((port) => typeof port.targetPort === 'string' && !pods.some((pod) => pod.ports[port.targetPort] !== undefined))
    .map((port) => `${name}: targetPort "${port.targetPort}" is no named port of its pods`);
}

function selectorProblems(world: World, object: KubernetesObject, selector: Json | undefined, field: string): string[] {
  if (world.podsIn(namespaceOf(object), selector).length > 0) return [];
  return [`${object.kind} ${namespaceOf(object)}/${object.metadata.name}: ${field} ${describeSelector(selector)} selects no pod`];
}

function serviceMonitorProblems(world: World, monitor: KubernetesObject): string[] {
  const spec = (monitor as Json).spec as Json;
  const name = `ServiceMonitor ${namespaceOf(monitor)}/${monitor.metadata.name}`;
  const namespaces: string[] = spec.namespaceSelector?.matchNames ?? [namespaceOf(monitor)];
  const services = world.all('Service').filter((service) => namespaces.includes(namespaceOf(service)) && selects(spec.selector, (service.metadata.labels as Labels | undefined) ?? {}));
  if (services.length === 0) return [`${name}: selector ${describeSelector(spec.selector)} selects no Service`];
  return ((spec.endpoints ?? []) as Json[])
    .filter((endpoint) => endpoint.port !== undefined && !services.some((service) => ((service as Json).spec.ports as Json[]).some((port) => port.name === endpoint.port)))
    .map((endpoint) => `${name}: endpoint port "${endpoint.port}" is no port of the Services it selects`);
}

function autoscalerProblems(world: World, autoscaler: KubernetesObject): string[] {
  const target = (autoscaler as Json).spec.scaleTargetRef as Json;
  const found = world.all(target.kind).some((object) => object.metadata.name === target.name && namespaceOf(object) === namespaceOf(autoscaler));
  return found ? [] : [`HorizontalPodAutoscaler ${namespaceOf(autoscaler)}/${autoscaler.metadata.name}: scaleTargetRef ${target.kind} ${target.name} does not exist`];
}

const PRINCIPAL = /^cluster\.local\/ns\/([^/]+)\/sa\/([^/]+)$/;

function authorizationPolicyProblems(world: World, policy: KubernetesObject): string[] {
  const spec = (policy as Json).spec as Json;
  const name = `AuthorizationPolicy ${namespaceOf(policy)}/${policy.metadata.name}`;
  const problems = spec.selector === undefined ? [] : selectorProblems(world, policy, spec.selector, 'selector');
  const action = spec.action ?? 'ALLOW';
  const provider = spec.provider?.name as string | undefined;
  if (action === 'CUSTOM' && provider === undefined) problems.push(`${name}: action CUSTOM without a provider`);
  if (provider !== undefined && action !== 'CUSTOM') problems.push(`${name}: a provider with action ${action}: only CUSTOM sends requests to a provider (DENY would refuse what the rules match, unchecked)`);
  if (provider !== undefined && !world.meshProviders.includes(provider)) problems.push(`${name}: provider "${provider}" is not defined in the mesh config (extensionProviders: ${world.meshProviders.join(', ')})`);
  for (const rule of (spec.rules ?? []) as Json[]) {
    for (const from of (rule.from ?? []) as Json[]) {
      for (const principal of (from.source?.principals ?? []) as string[]) {
        const match = PRINCIPAL.exec(principal);
        if (match === null) continue;
        const [, namespace, account] = match;
        if (!world.pods.some((pod) => pod.namespace === namespace && pod.serviceAccount === account)) problems.push(`${name}: principal ${principal} is the identity of no pod`);
      }
    }
  }
  return problems;
}

function destinationRuleProblems(world: World, rule: KubernetesObject): string[] {
  const host = (rule as Json).spec.host as string;
  const match = /^([^.]+)\.([^.]+)\.svc(\.cluster\.local)?$/.exec(host);
  if (match === null) return [];
  const found = world.all('Service').some((service) => service.metadata.name === match[1] && namespaceOf(service) === match[2]);
  return found ? [] : [`DestinationRule ${namespaceOf(rule)}/${rule.metadata.name}: host ${host} is no Service`];
}

function certificateProblems(world: World, certificate: KubernetesObject): string[] {
  const issuer = (certificate as Json).spec.issuerRef as Json;
  const kind = issuer.kind ?? 'Issuer';
  const found = world.all(kind).some((object) => object.metadata.name === issuer.name && (kind === 'ClusterIssuer' || namespaceOf(object) === namespaceOf(certificate)));
  return found ? [] : [`Certificate ${namespaceOf(certificate)}/${certificate.metadata.name}: issuerRef ${kind} ${issuer.name} does not exist`];
}

/**
 * Every reference between objects that must resolve for the deployment to work, each problem
 * naming the object and the reference: selectors that select nothing, named ports that are not
 * there, providers the mesh does not define, a provider under an action that never consults it.
 */
export function referenceProblems(world: World): string[] {
  const check: Record<string, (world: World, object: KubernetesObject) => string[]> = {
    Service: serviceProblems,
    NetworkPolicy: networkPolicyProblems,
    PodDisruptionBudget: (w, o) => selectorProblems(w, o, (o as Json).spec.selector, 'selector'),
    HorizontalPodAutoscaler: autoscalerProblems,
    ServiceMonitor: serviceMonitorProblems,
    AuthorizationPolicy: authorizationPolicyProblems,
    PeerAuthentication: (w, o) => ((o as Json).spec.selector === undefined ? [] : selectorProblems(w, o, (o as Json).spec.selector, 'selector')),
    RequestAuthentication: (w, o) => ((o as Json).spec.selector === undefined ? [] : selectorProblems(w, o, (o as Json).spec.selector, 'selector')),
    DestinationRule: destinationRuleProblems,
    Certificate: certificateProblems,
  };
  const priorityClasses = new Set(world.all('PriorityClass').map((object) => object.metadata.name));
  const unknownPriorities = world.pods
    .filter((pod) => pod.priorityClassName !== undefined && !priorityClasses.has(pod.priorityClassName))
    .map((pod) => `${pod.from}: priorityClassName ${pod.priorityClassName} is no PriorityClass`);
  return [...world.objects.flatMap((object) => check[object.kind]?.(world, object) ?? []), ...unknownPriorities];
}
