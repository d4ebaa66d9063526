import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ISTIOD_VALUES, readYaml } from './manifests.js';
import { parseDuration } from './proto-json.js';

type Json = Record<string, any>;
type FieldKind = 'string' | 'port' | 'duration' | 'boolean' | 'bytes' | { readonly [field: string]: FieldKind };

/**
 * Istio's ext_authz gRPC provider: istio.mesh.v1alpha1.MeshConfig.ExtensionProvider
 * .EnvoyExternalAuthorizationGrpcProvider and its EnvoyExternalAuthorizationRequestBody
 * (istio/api, mesh/v1alpha1/config.proto), by JSON name. MeshConfig is not a Kubernetes resource
 * and no npm package ships its schema (@kubernetes-models/istio's IstioOperator stops at
 * metadata), so these fields are transcribed from the proto: a misspelt key is caught all the same.
 */
const GRPC_PROVIDER: FieldKind = {
  service: 'string',
  port: 'port',
  timeout: 'duration',
  failOpen: 'boolean',
  statusOnError: 'string',
  includeRequestBodyInCheck: { maxRequestBytes: 'bytes', allowPartialMessage: 'boolean', packAsBytes: 'boolean' },
};

function problems(kind: FieldKind, value: unknown, path: string): string[] {
  if (typeof kind === 'object') {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path}: expected an object`];
    return Object.entries(value).flatMap(([key, child]) =>
      kind[key] === undefined ? [`${path}.${key}: not a field of Istio's EnvoyExternalAuthorizationGrpcProvider`] : problems(kind[key]!, child, `${path}.${key}`),
    );
  }
  const valid: Record<string, (v: unknown) => boolean> = {
    string: (v) => typeof v === 'string',
    boolean: (v) => typeof v === 'boolean',
    port: (v) => Number.isInteger(v) && (v as number) > 0 && (v as number) < 65536,
    bytes: (v) => Number.isInteger(v) && (v as number) > 0 && (v as number) < 2 ** 32,
    duration: (v) => {
      try {
        return parseDuration(v) >= 0;
      } catch {
        return false;
      }
    },
  };
  return valid[kind]!(value) ? [] : [`${path}: expected a ${kind}, got ${JSON.stringify(value)}`];
}

function providerProblems(values: Json): string[] {
  const providers = values.meshConfig?.extensionProviders;
  if (!Array.isArray(providers)) return ['meshConfig.extensionProviders: expected a list'];
  return providers.flatMap((provider: Json, index: number) => {
    const path = `meshConfig.extensionProviders[${index}]`;
    const { name, envoyExtAuthzGrpc, ...others } = provider;
    return [
      ...(typeof name === 'string' && name !== '' ? [] : [`${path}.name: required`]),
      ...Object.keys(others).map((key) => `${path}.${key}: not the ext_authz gRPC provider (envoyExtAuthzGrpc)`),
      ...(envoyExtAuthzGrpc === undefined ? [`${path}.envoyExtAuthzGrpc: required`] : problems(GRPC_PROVIDER, envoyExtAuthzGrpc, `${path}.envoyExtAuthzGrpc`)),
      ...(envoyExtAuthzGrpc?.service && envoyExtAuthzGrpc?.port ? [] : [`${path}.envoyExtAuthzGrpc: service and port are required`]),
    ];
  });
}

describe('the Istio extension provider (istiod-values.yaml) against Istio\'s MeshConfig fields', () => {
  const values = readYaml(ISTIOD_VALUES) as Json;

  it('names only fields of EnvoyExternalAuthorizationGrpcProvider, with the right types', () => {
    assert.deepEqual(providerProblems(values), []);
  });

  const planted: Array<[string, (provider: Json) => void, RegExp]> = [
    ['a misspelt field', (p) => ((p.failopen = false), delete p.failOpen), /envoyExtAuthzGrpc\.failopen: not a field/],
    ['a field of the HTTP provider', (p) => (p.pathPrefix = '/check'), /envoyExtAuthzGrpc\.pathPrefix: not a field/],
    ['a misspelt body setting', (p) => (p.includeRequestBodyInCheck.packAsByte = true), /includeRequestBodyInCheck\.packAsByte: not a field/],
    ['a timeout without a unit', (p) => (p.timeout = 250), /timeout: expected a duration/],
    ['a status as a number', (p) => (p.statusOnError = 503), /statusOnError: expected a string/],
  ];
  for (const [mistake, plant, expected] of planted) {
    it(`catches ${mistake}`, () => {
      const copy = structuredClone(values);
      plant(copy.meshConfig.extensionProviders[0].envoyExtAuthzGrpc);
      const found = providerProblems(copy);
      assert.ok(found.some((problem) => expected.test(problem)), `expected ${expected}, got:\n${found.join('\n')}`);
    });
  }
});
