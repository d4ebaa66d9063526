import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import protobuf from 'protobufjs';
import { PROTO_DIR } from '../paths.js';
import type { CheckRequestMessage } from './messages.js';
import { AUTHORIZATION_PROTO_FILE, AUTHORIZATION_SERVICE } from './proto.js';
import { isRecord } from './request-view.js';

const CHECK_REQUEST_TYPE = 'envoy.service.auth.v3.CheckRequest';
// protobufjs's base64 decoder names no field when it fails.
const BYTES_HINT = /invalid encoding/;
// A hostile or mistyped file may name any number of fields; a few are enough to see what went wrong.
const MAX_IGNORED_LISTED = 20;

export type DecodedCheckRequest =
  | {
      readonly ok: true;
      readonly request: CheckRequestMessage;
      /** Fields our protos do not have, by path. */
      readonly ignoredFields: readonly string[];
    }
  | { readonly ok: false; readonly reason: string };

function loadCheckRequestType(): protobuf.Type {
  const root = new protobuf.Root();
  // Imports resolve in proto/ as proto-loader's includeDirs do; google/protobuf/* are protobufjs's own.
  root.resolvePath = (_origin, target) => {
    if (isAbsolute(target)) return target;
    const inProtoDir = join(PROTO_DIR, target);
    return existsSync(inProtoDir) ? inProtoDir : target;
  };
  root.loadSync(AUTHORIZATION_PROTO_FILE, { keepCase: true });
  root.resolveAll();
  return root.lookupType(CHECK_REQUEST_TYPE);
}

const CHECK_REQUEST = loadCheckRequestType();

/** A field's proto3 JSON name, as protoc derives json_name: underscores dropped, the next letter upper case. */
function jsonName(fieldName: string): string {
  return fieldName.replace(/_+([^_])?/g, (_match, next: string | undefined) => (next === undefined ? '' : next.toUpperCase()));
}

/** Renamed to proto names, recursively: proto3 JSON takes either, fromObject with keepCase only the proto name. */
function withProtoNames(type: protobuf.Type, value: unknown, path: string, ignored: string[]): unknown {
  if (!isRecord(value)) return value;
  const renamed: Record<string, unknown> = {};
  for (const [name, fieldValue] of Object.entries(value)) {
    const field = type.fields[name] ?? type.fieldsArray.find((candidate) => jsonName(candidate.name) === name);
    if (field === undefined) {
      ignored.push(`${path}${name}`);
      continue;
    }
    if (field.name in renamed) throw new Error(`${path}${field.name} is given twice (as ${field.name} and ${jsonName(field.name)})`);
    const message = field.resolvedType instanceof protobuf.Type ? field.resolvedType : undefined;
    const inner = `${path}${field.name}.`;
    const convert = (element: unknown) => (message === undefined ? element : withProtoNames(message, element, inner, ignored));
    if (field.map && isRecord(fieldValue)) {
      renamed[field.name] = Object.fromEntries(Object.entries(fieldValue).map(([key, element]) => [key, convert(element)]));
    } else if (field.repeated && Array.isArray(fieldValue)) {
      renamed[field.name] = fieldValue.map(convert);
    } else {
      renamed[field.name] = convert(fieldValue);
    }
  }
  return renamed;
}

/** A CheckRequest in proto3 JSON, encoded and decoded as the gRPC server would decode it from the wire. */
export function checkRequestFromJson(json: unknown): DecodedCheckRequest {
  if (!isRecord(json)) return { ok: false, reason: 'expected a JSON object, a CheckRequest such as {"attributes":{"request":{"http":{...}}}}' };
  const ignored: string[] = [];
  let bytes: Uint8Array;
  try {
    const message = CHECK_REQUEST.fromObject(withProtoNames(CHECK_REQUEST, json, '', ignored) as Record<string, unknown>);
    bytes = CHECK_REQUEST.encode(message).finish();
  } catch (error) {
    const hint = BYTES_HINT.test((error as Error).message) ? ' (bytes such as raw_body and raw_value are base64 in JSON)' : '';
    return { ok: false, reason: `not a CheckRequest: ${(error as Error).message}${hint}` };
  }
  const listed = ignored.length > MAX_IGNORED_LISTED ? [...ignored.slice(0, MAX_IGNORED_LISTED), `${ignored.length - MAX_IGNORED_LISTED} more`] : ignored;
  return { ok: true, request: AUTHORIZATION_SERVICE.Check.requestDeserialize(Buffer.from(bytes)), ignoredFields: listed };
}
