import protobuf from 'protobufjs';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A strict check of a configuration written in protobuf's JSON mapping (as Envoy reads its YAML
 * bootstrap) against the real .proto definitions: every key a field of its message (by its proto
 * name or its lowerCamel JSON name, as Envoy accepts both), the right JSON type for each field,
 * enum names that exist, well-formed Durations, at most one member of a oneof, no deprecated field,
 * and the protoc-gen-validate rules Envoy enforces at load time that matter for hand-written
 * config: required messages and oneofs, string min_len, repeated min_items, numeric and duration
 * bounds. Every `google.protobuf.Any` (`typed_config`) is checked as the type its `@type` names,
 * recursively, and a TypedStruct's value as its `type_url`.
 *
 * Messages are loaded lazily, a proto package (directory) at a time, from the include directories.
 */
export class ProtoJsonSchema {
  private readonly root = new protobuf.Root();
  private readonly loadedDirs = new Set<string>();
  private readonly jsonNames = new Map<protobuf.Type, Map<string, protobuf.Field>>();

  constructor(private readonly includeDirs: readonly string[]) {
    this.root.resolvePath = (_origin, target) => {
      for (const dir of includeDirs) {
        const candidate = join(dir, target);
        if (existsSync(candidate)) return candidate;
      }
      return target;
    };
  }

  /** Problems found in `value` read as the message `typeName`, each "path: what is wrong"; none when valid. */
  validate(typeName: string, value: unknown, path = '$'): string[] {
    const problems: string[] = [];
    const type = this.lookupType(typeName);
    if (type === undefined) return [`${path}: no message type ${typeName} in the protos`];
    this.checkMessage(type, value, path, problems);
    return problems;
  }

  /** The message type of a full name, loading its package's protos on first use. */
  lookupType(fullName: string): protobuf.Type | undefined {
    const name = fullName.replace(/^\./, '');
    const found = this.tryLookup(name);
    if (found !== undefined) return found;
    // envoy.extensions.filters.http.ext_authz.v3.ExtAuthz lives in envoy/extensions/filters/http/ext_authz/v3/.
    const parts = name.split('.');
    for (let length = parts.length - 1; length > 0; length--) {
      const relative = parts.slice(0, length).join('/');
      for (const dir of this.includeDirs) {
        const packageDir = join(dir, relative);
        if (!existsSync(packageDir) || this.loadedDirs.has(packageDir)) continue;
        this.loadedDirs.add(packageDir);
        const files = readdirSync(packageDir).filter((file) => file.endsWith('.proto'));
        if (files.length === 0) continue;
        this.root.loadSync(files.map((file) => `${relative}/${file}`), { keepCase: true });
        this.root.resolveAll();
        const loaded = this.tryLookup(name);
        if (loaded !== undefined) return loaded;
      }
    }
    return undefined;
  }

  private tryLookup(name: string): protobuf.Type | undefined {
    const found = this.root.lookup(name);
    return found instanceof protobuf.Type ? found : undefined;
  }

  private fieldsByJsonName(type: protobuf.Type): Map<string, protobuf.Field> {
    let names = this.jsonNames.get(type);
    if (names === undefined) {
      names = new Map();
      for (const field of type.fieldsArray) {
        names.set(field.name, field);
        const jsonName = (field.options?.json_name as string | undefined) ?? lowerCamel(field.name);
        names.set(jsonName, field);
      }
      this.jsonNames.set(type, names);
    }
    return names;
  }

  private checkMessage(type: protobuf.Type, value: unknown, path: string, problems: string[]): void {
    const wellKnown = WELL_KNOWN[type.fullName];
    if (wellKnown !== undefined) {
      const problem = wellKnown(value);
      if (problem !== undefined) problems.push(`${path}: ${problem}`);
      return;
    }
    if (type.fullName === '.google.protobuf.Any') return this.checkAny(value, path, problems);
    if (!isPlainObject(value)) {
      problems.push(`${path}: expected an object (message ${type.fullName.slice(1)}), got ${describe(value)}`);
      return;
    }
    const fields = this.fieldsByJsonName(type);
    const present = new Set<protobuf.Field>();
    for (const [key, fieldValue] of Object.entries(value)) {
      const field = fields.get(key);
      const fieldPath = `${path}.${key}`;
      if (field === undefined) {
        problems.push(`${fieldPath}: ${type.fullName.slice(1)} has no field "${key}"${suggestion(key, type)}`);
        continue;
      }
      if (present.has(field)) problems.push(`${fieldPath}: ${field.name} is set twice (snake_case and lowerCamel)`);
      present.add(field);
      if (field.options?.deprecated === true) problems.push(`${fieldPath}: ${field.name} is deprecated in ${type.fullName.slice(1)}`);
      if (fieldValue === null) {
        problems.push(`${fieldPath}: empty value (write {} for an empty message, or leave the field out)`);
        continue;
      }
      this.checkField(field, fieldValue, fieldPath, problems);
    }
    for (const oneof of type.oneofsArray) {
      if (isSynthetic(oneof)) continue;
      const set = oneof.fieldsArray.filter((field) => present.has(field));
      if (set.length > 1) problems.push(`${path}: at most one of ${oneof.name} (${set.map((f) => f.name).join(', ')})`);
      if (set.length === 0 && oneof.options?.['(validate.required)'] === true) {
        problems.push(`${path}: one of ${oneof.fieldsArray.map((f) => f.name).join(', ')} is required (${oneof.name})`);
      }
    }
    for (const field of type.fieldsArray) {
      // A required member of a oneof is required only once the oneof chose it (PGV).
      if (field.partOf !== null && !isSynthetic(field.partOf)) continue;
      if (!present.has(field) && isRequired(field)) problems.push(`${path}: ${field.name} is required in ${type.fullName.slice(1)}`);
    }
  }

  private checkAny(value: unknown, path: string, problems: string[]): void {
    if (!isPlainObject(value)) {
      problems.push(`${path}: expected an object with "@type", got ${describe(value)}`);
      return;
    }
    const typeUrl = value['@type'];
    if (typeof typeUrl !== 'string' || !typeUrl.includes('/')) {
      problems.push(`${path}: "@type" must be a type URL such as type.googleapis.com/envoy.config.core.v3.Node`);
      return;
    }
    const typeName = typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
    const type = this.lookupType(typeName);
    if (type === undefined) {
      problems.push(`${path}["@type"]: no message type ${typeName} in Envoy's protos`);
      return;
    }
    const { '@type': _typeUrl, ...rest } = value;
    if (WELL_KNOWN[type.fullName] !== undefined) {
      // A well-known type with a JSON form of its own sits in "value" (proto3 JSON mapping of Any).
      const keys = Object.keys(rest);
      if (keys.length !== 1 || keys[0] !== 'value') problems.push(`${path}: an Any of ${typeName} holds exactly "@type" and "value"`);
      else this.checkMessage(type, rest.value, `${path}.value`, problems);
      return;
    }
    this.checkMessage(type, rest, path, problems);
    if (TYPED_STRUCTS.has(type.fullName) && typeof rest.type_url === 'string' && rest.value !== undefined) {
      const inner = rest.type_url.slice(rest.type_url.lastIndexOf('/') + 1);
      problems.push(...this.validate(inner, rest.value, `${path}.value`));
    }
  }

  private checkField(field: protobuf.Field, value: unknown, path: string, problems: string[]): void {
    if (field.map) {
      if (!isPlainObject(value)) {
        problems.push(`${path}: expected an object (map of ${field.name}), got ${describe(value)}`);
        return;
      }
      const keyType = (field as unknown as protobuf.MapField).keyType;
      for (const [key, entry] of Object.entries(value)) {
        if (keyType !== 'string' && !/^-?\d+$/.test(key)) problems.push(`${path}.${key}: a ${keyType} map key`);
        this.checkSingle(field, entry, `${path}.${key}`, problems);
      }
      return;
    }
    if (field.repeated) {
      if (!Array.isArray(value)) {
        problems.push(`${path}: expected a list (repeated ${field.name}), got ${describe(value)}`);
        return;
      }
      const minItems = rule(field, 'repeated.min_items');
      if (typeof minItems === 'number' && value.length < minItems) problems.push(`${path}: at least ${minItems} item(s)`);
      value.forEach((item, index) => this.checkSingle(field, item, `${path}[${index}]`, problems));
      return;
    }
    this.checkSingle(field, value, path, problems);
  }

  private checkSingle(field: protobuf.Field, value: unknown, path: string, problems: string[]): void {
    const resolved = field.resolvedType;
    if (resolved instanceof protobuf.Enum) {
      const known = typeof value === 'string' ? value in resolved.values : Object.values(resolved.values).includes(value as number);
      if (!known) problems.push(`${path}: ${JSON.stringify(value)} is not one of ${Object.keys(resolved.values).join(', ')}`);
      return;
    }
    if (resolved instanceof protobuf.Type) {
      this.checkMessage(resolved, value, path, problems);
      const scalar = WRAPPER_SCALARS[resolved.fullName];
      if (scalar !== undefined) checkBounds(field, value, scalar, path, problems);
      if (resolved.fullName === '.google.protobuf.Duration' && typeof value === 'string') checkDurationBounds(field, value, path, problems);
      return;
    }
    const problem = SCALARS[field.type]?.(value);
    if (problem !== undefined) {
      problems.push(`${path}: ${problem}`);
      return;
    }
    checkBounds(field, value, field.type, path, problems);
  }
}

/** protoc's json_name: underscores dropped, the letter after each capitalised. */
function lowerCamel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_match, letter: string) => letter.toUpperCase());
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  return `${typeof value} ${JSON.stringify(value)}`;
}

function suggestion(key: string, type: protobuf.Type): string {
  const near = type.fieldsArray.map((field) => field.name).filter((name) => editDistance(name, key) <= 2 || editDistance(lowerCamel(name), key) <= 2);
  return near.length > 0 ? `; did you mean ${near.join(' or ')}?` : '';
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_value, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** A protoc-gen-validate option of the field, e.g. rule(field, 'string.min_len'). */
function rule(field: protobuf.Field, name: string): unknown {
  return field.options?.[`(validate.rules).${name}`];
}

/** proto3 `optional` makes a synthetic oneof of one field, named _<field>. */
function isSynthetic(oneof: protobuf.OneOf): boolean {
  return oneof.fieldsArray.length === 1 && oneof.name.startsWith('_');
}

function isRequired(field: protobuf.Field): boolean {
  return ['message.required', 'duration.required', 'timestamp.required', 'any.required'].some((name) => rule(field, name) === true);
}

const INTEGER = /^-?\d+$/;
const UNSIGNED = new Set(['uint32', 'uint64', 'fixed32', 'fixed64']);
const INT32_RANGE: Record<string, [number, number]> = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  sint32: [-(2 ** 31), 2 ** 31 - 1],
  sfixed32: [-(2 ** 31), 2 ** 31 - 1],
  uint32: [0, 2 ** 32 - 1],
  fixed32: [0, 2 ** 32 - 1],
};

function integerProblem(kind: string, value: unknown): string | undefined {
  const text = typeof value === 'number' ? (Number.isInteger(value) ? String(value) : undefined) : typeof value === 'string' ? value : undefined;
  if (text === undefined || !INTEGER.test(text)) return `expected a whole number (${kind}), got ${describe(value)}`;
  if (UNSIGNED.has(kind) && text.startsWith('-')) return `expected a non-negative number (${kind}), got ${text}`;
  const range = INT32_RANGE[kind];
  if (range !== undefined && (Number(text) < range[0] || Number(text) > range[1])) return `${text} is out of range for ${kind}`;
  return undefined;
}

function doubleProblem(value: unknown): string | undefined {
  if (typeof value === 'number') return undefined;
  if (typeof value === 'string' && (/^(NaN|-?Infinity)$/.test(value) || (value.trim() !== '' && !Number.isNaN(Number(value))))) return undefined;
  return `expected a number, got ${describe(value)}`;
}

const SCALARS: Record<string, (value: unknown) => string | undefined> = {
  string: (value) => (typeof value === 'string' ? undefined : `expected a string, got ${describe(value)} (quote it)`),
  bool: (value) => (typeof value === 'boolean' ? undefined : `expected true or false, got ${describe(value)}`),
  bytes: (value) => (typeof value === 'string' && /^[A-Za-z0-9+/_-]*={0,2}$/.test(value) ? undefined : `expected base64 bytes, got ${describe(value)}`),
  double: doubleProblem,
  float: doubleProblem,
  ...Object.fromEntries(
    ['int32', 'int64', 'uint32', 'uint64', 'sint32', 'sint64', 'fixed32', 'fixed64', 'sfixed32', 'sfixed64'].map((kind) => [
      kind,
      (value: unknown) => integerProblem(kind, value),
    ]),
  ),
};

/** The scalar that each wrapper stands for in JSON. */
const WRAPPER_SCALARS: Record<string, string> = {
  '.google.protobuf.DoubleValue': 'double',
  '.google.protobuf.FloatValue': 'float',
  '.google.protobuf.Int64Value': 'int64',
  '.google.protobuf.UInt64Value': 'uint64',
  '.google.protobuf.Int32Value': 'int32',
  '.google.protobuf.UInt32Value': 'uint32',
  '.google.protobuf.BoolValue': 'bool',
  '.google.protobuf.StringValue': 'string',
  '.google.protobuf.BytesValue': 'bytes',
};

// proto3 JSON: "1.5s", "-0.000000001s"; at most nine fractional digits; ±315,576,000,000 s.
const DURATION = /^-?(\d+)(\.\d{1,9})?s$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

const WELL_KNOWN: Record<string, (value: unknown) => string | undefined> = {
  '.google.protobuf.Duration': (value) => {
    const match = typeof value === 'string' ? DURATION.exec(value) : null;
    if (match === null) return `expected a duration such as "0.25s" or "30s", got ${describe(value)}`;
    return Number(match[1]) > 315_576_000_000 ? `duration ${value as string} is out of range` : undefined;
  },
  '.google.protobuf.Timestamp': (value) => (typeof value === 'string' && RFC3339.test(value) ? undefined : `expected an RFC 3339 time, got ${describe(value)}`),
  '.google.protobuf.Struct': (value) => (isPlainObject(value) ? undefined : `expected an object (Struct), got ${describe(value)}`),
  '.google.protobuf.Value': () => undefined,
  '.google.protobuf.ListValue': (value) => (Array.isArray(value) ? undefined : `expected a list (ListValue), got ${describe(value)}`),
  '.google.protobuf.FieldMask': (value) => (typeof value === 'string' ? undefined : `expected a field mask string, got ${describe(value)}`),
  ...Object.fromEntries(Object.entries(WRAPPER_SCALARS).map(([name, scalar]) => [name, (value: unknown) => SCALARS[scalar]!(value)])),
};

const TYPED_STRUCTS = new Set(['.xds.type.v3.TypedStruct', '.udpa.type.v1.TypedStruct']);

/** PGV numeric rules: gt, gte, lt, lte (for the field's own scalar kind or its wrapper's). */
function checkBounds(field: protobuf.Field, value: unknown, kind: string, path: string, problems: string[]): void {
  const number = Number(value);
  if (Number.isNaN(number)) return;
  const bounds: Array<[string, (limit: number) => boolean, string]> = [
    ['gt', (limit) => number > limit, 'greater than'],
    ['gte', (limit) => number >= limit, 'at least'],
    ['lt', (limit) => number < limit, 'less than'],
    ['lte', (limit) => number <= limit, 'at most'],
  ];
  for (const [name, holds, words] of bounds) {
    const limit = rule(field, `${kind}.${name}`);
    if (typeof limit === 'number' && !holds(limit)) problems.push(`${path}: must be ${words} ${limit}, got ${number}`);
  }
  const minLength = kind === 'string' ? rule(field, 'string.min_len') : undefined;
  if (typeof minLength === 'number' && typeof value === 'string' && [...value].length < minLength) {
    problems.push(`${path}: at least ${minLength} character(s)`);
  }
}

function durationSeconds(text: string): number {
  return Number(text.slice(0, -1));
}

/** PGV duration rules, written as nested {seconds, nanos} options: duration.gt.nanos, duration.lte.seconds … */
function checkDurationBounds(field: protobuf.Field, value: string, path: string, problems: string[]): void {
  const seconds = durationSeconds(value);
  const limit = (name: string): number | undefined => {
    const whole = rule(field, `duration.${name}.seconds`);
    const nanos = rule(field, `duration.${name}.nanos`);
    if (whole === undefined && nanos === undefined) return undefined;
    return Number(whole ?? 0) + Number(nanos ?? 0) / 1e9;
  };
  const bounds: Array<[string, (l: number) => boolean, string]> = [
    ['gt', (l) => seconds > l, 'longer than'],
    ['gte', (l) => seconds >= l, 'at least'],
    ['lt', (l) => seconds < l, 'shorter than'],
    ['lte', (l) => seconds <= l, 'at most'],
  ];
  for (const [name, holds, words] of bounds) {
    const l = limit(name);
    if (l !== undefined && !holds(l)) problems.push(`${path}: must be ${words} ${l}s, got ${value}`);
  }
}

/** Seconds of a proto3 JSON duration ("0.25s" → 0.25), for tests that compare settings. */
export function parseDuration(text: unknown): number {
  if (typeof text !== 'string' || !DURATION.test(text)) throw new Error(`not a duration: ${JSON.stringify(text)}`);
  return durationSeconds(text);
}
