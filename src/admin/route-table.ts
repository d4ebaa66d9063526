import type { Config } from '../config.js';
import type { Changed } from '../operations/operation-context.js';
import type { CredentialAdmin } from '../store/credential-admin.js';
import { ApiError } from './api-error.js';
import type { AdminPrincipal, AdminRole } from './principal.js';

/** A route declared once: the dispatcher (admin-server.ts) and the OpenAPI document (openapi.ts) read the table. */

interface SchemaCommon {
  readonly description?: string;
  readonly nullable?: boolean;
}

/** The part of JSON Schema 2020-12 (as OpenAPI 3.1 takes it) that bodies and answers use. */
export type Schema =
  | (SchemaCommon & { readonly type: 'string'; readonly enum?: readonly string[]; readonly format?: 'date-time' | 'uri'; readonly maxLength?: number; readonly example?: string })
  | (SchemaCommon & { readonly type: 'boolean' })
  | (SchemaCommon & { readonly type: 'integer' | 'number'; readonly minimum?: number; readonly maximum?: number })
  | (SchemaCommon & { readonly type: 'array'; readonly items: Schema; readonly maxItems?: number })
  | ObjectSchema
  | (SchemaCommon & { readonly type: 'any' });

export interface ObjectSchema extends SchemaCommon {
  readonly type: 'object';
  readonly properties: Readonly<Record<string, Schema>>;
  readonly required?: readonly string[];
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Lists take ?limit= and ?cursor= and answer {items, next}. */
export const PAGE_LIMIT_DEFAULT = 100;
export const PAGE_LIMIT_MAX = 1_000;

interface Page {
  readonly limit: number;
  /** Where the previous page ended (opaque to clients); undefined for the first page. */
  readonly cursor: string | undefined;
}

export interface RouteRequest {
  /** Undefined on the public routes only. */
  readonly principal: AdminPrincipal | undefined;
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** As the route's schema checked it ({} when the route takes none). */
  readonly body: Readonly<Record<string, unknown>>;
  readonly page: Page;
  /** The store acting as the person: every change is audited with them as actor. */
  readonly admin: CredentialAdmin;
  readonly config: Config;
  readonly now: number;
}

export interface AdminRoute {
  readonly method: HttpMethod;
  /** Each {name} is one path segment, URL-decoded. */
  readonly path: string;
  readonly role: AdminRole | 'public';
  readonly summary: string;
  /** Descriptions of path parameters, where openapi.ts's common ones do not say enough. */
  readonly params?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, { readonly description: string; readonly schema: Schema }>>;
  readonly body?: ObjectSchema;
  readonly status?: 200 | 201;
  /** What a success answers (a paginated route: each item); tests hold every answer to it. */
  readonly response: Schema;
  readonly paginated?: boolean;
  /** A paginated route's optional fields beside items and next. */
  readonly envelope?: Readonly<Record<string, Schema>>;
  handle(request: RouteRequest): Promise<unknown>;
}

const invalid = (message: string, field: string | undefined) => new ApiError(400, 'INVALID_REQUEST', message, {}, undefined, field);

function paramsOf(pattern: readonly string[], given: readonly string[]): Record<string, string> | undefined {
  if (pattern.length !== given.length) return undefined;
  const params: Record<string, string> = {};
  for (const [index, part] of pattern.entries()) {
    const segment = given[index] ?? '';
    const name = /^\{(\w+)\}$/.exec(part)?.[1];
    if (name === undefined) {
      if (part !== segment) return undefined;
      continue;
    }
    try {
      params[name] = decodeURIComponent(segment);
    } catch {
      throw invalid(`the path segment ${JSON.stringify(segment.slice(0, 64))} is not valid percent-encoding`, undefined);
    }
    if (params[name] === '') return undefined;
  }
  return params;
}

/** The route for a method and a raw path; `allowed` lists the methods the path has when none matches. */
export function matchRoute(
  routes: readonly AdminRoute[],
  method: string,
  rawPath: string,
): { readonly match?: { readonly route: AdminRoute; readonly params: Record<string, string> }; readonly allowed: HttpMethod[] } {
  const given = rawPath.split('/').slice(1);
  const allowed: HttpMethod[] = [];
  for (const route of routes) {
    const params = paramsOf(route.path.split('/').slice(1), given);
    if (params === undefined) continue;
    if (route.method === method || (method === 'HEAD' && route.method === 'GET')) return { match: { route, params }, allowed };
    allowed.push(route.method);
  }
  return { allowed };
}

function typeName(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

const TYPES: Record<Exclude<Schema['type'], 'object' | 'any'>, readonly [(value: unknown) => boolean, string]> = {
  number: [(value) => typeof value === 'number' && Number.isFinite(value), 'a number'],
  string: [(value) => typeof value === 'string', 'a string'],
  boolean: [(value) => typeof value === 'boolean', 'true or false'],
  integer: [Number.isSafeInteger, 'a whole number'],
  array: [Array.isArray, 'an array'],
};

/** `field`: the body's field the value is (in), named in the answer. */
function check(value: unknown, schema: Schema, where: string, field?: string): void {
  if ((value === null && schema.nullable === true) || schema.type === 'any') return;
  if (schema.type === 'object') return checkObject(value, schema, where, field);
  const [fits, what] = TYPES[schema.type];
  if (!fits(value)) throw invalid(`${where} must be ${what}${schema.nullable === true ? ' or null' : ''}, not ${typeName(value)}`, field);
  if (schema.type === 'string') {
    const text = value as string;
    if (schema.maxLength !== undefined && text.length > schema.maxLength) throw invalid(`${where} is longer than ${schema.maxLength} characters`, field);
    if (schema.enum !== undefined && !schema.enum.includes(text)) throw invalid(`${where} must be one of ${schema.enum.join(', ')}, not ${JSON.stringify(text.slice(0, 64))}`, field);
  }
  if (schema.type === 'array') {
    const items = value as unknown[];
    if (schema.maxItems !== undefined && items.length > schema.maxItems) throw invalid(`${where} has ${items.length} items; send at most ${schema.maxItems}`, field);
    items.forEach((item, index) => check(item, schema.items, `${where}[${index}]`, field));
  }
}

function checkObject(value: unknown, schema: ObjectSchema, where: string, field?: string): asserts value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(`${where} must be a JSON object, not ${typeName(value)}`, field);
  const fields = value as Record<string, unknown>;
  for (const name of Object.keys(fields)) {
    // Own properties only: `in` would find toString, constructor and __proto__ on every object.
    if (!Object.hasOwn(schema.properties, name)) {
      const known = Object.keys(schema.properties);
      throw invalid(`${where} has an unknown field ${JSON.stringify(name.slice(0, 64))}; ${known.length === 0 ? 'send no fields' : `the fields are ${known.join(', ')}`}`, field ?? name);
    }
  }
  for (const name of schema.required ?? []) {
    if (!Object.hasOwn(fields, name) || fields[name] === undefined) throw invalid(`${where} needs the field "${name}"`, field ?? name);
  }
  for (const [name, value] of Object.entries(fields)) check(value, schema.properties[name] as Schema, `the field "${name}"`, field ?? name);
}

export function schemaProblem(value: unknown, schema: Schema, where = 'the answer'): string | undefined {
  try {
    check(value, schema, where);
    return undefined;
  } catch (error) {
    if (error instanceof ApiError) return error.message;
    throw error;
  }
}

/** Every property required, as answers have them. */
export function record(properties: Readonly<Record<string, Schema>>, description?: string): ObjectSchema {
  return { type: 'object', properties, required: Object.keys(properties), ...(description === undefined ? {} : { description }) };
}

/** A request body's schema: its fields, of which `required` must be sent. */
export function fields(properties: Readonly<Record<string, Schema>>, required?: readonly string[]): ObjectSchema {
  return { type: 'object', properties, ...(required === undefined ? {} : { required }) };
}

/**
 * The query, the body (their names and types checked) and the path's parameters as one input for an operation;
 * the path's last, so that the resource the URL names is the one changed whatever a body carries.
 */
export function input<Input>(request: RouteRequest): Input {
  return { ...Object.fromEntries(request.query), ...request.body, ...request.params } as Input;
}

export function checkedBody(route: AdminRoute, body: unknown): Record<string, unknown> {
  const schema: ObjectSchema = route.body ?? { type: 'object', properties: {} };
  // No body at all is an empty one; a body of JSON null is refused like any other that is no object.
  const value = body === undefined ? {} : body;
  checkObject(value, schema, 'the body');
  return value;
}

/** Query parameters the route does not declare are refused, so that a typo is not silently ignored. */
export function checkQuery(route: AdminRoute, query: URLSearchParams): Page {
  const known = new Set([...Object.keys(route.query ?? {}), ...(route.paginated === true ? ['limit', 'cursor'] : [])]);
  for (const name of new Set(query.keys())) {
    if (!known.has(name)) {
      throw invalid(`unknown query parameter ${JSON.stringify(name.slice(0, 64))}; ${known.size === 0 ? 'this route takes none' : `it takes ${[...known].join(', ')}`}`, name.slice(0, 64));
    }
    if (query.getAll(name).length > 1) throw invalid(`the query parameter ${name} is given more than once`, name);
  }
  const limitText = query.get('limit');
  let limit = PAGE_LIMIT_DEFAULT;
  if (limitText !== null) {
    if (!/^[1-9][0-9]{0,6}$/.test(limitText) || Number(limitText) > PAGE_LIMIT_MAX) {
      throw invalid(`limit must be a whole number from 1 to ${PAGE_LIMIT_MAX}, not ${JSON.stringify(limitText.slice(0, 32))}`, 'limit');
    }
    limit = Number(limitText);
  }
  return { limit, cursor: query.get('cursor') ?? undefined };
}

const CURSOR = /^o([0-9]{1,9})$/;

export function answerSchema(route: AdminRoute): Schema {
  if (route.paginated !== true) return route.response;
  return { type: 'object', properties: { items: { type: 'array', items: route.response }, next: { type: 'string', nullable: true }, ...route.envelope }, required: ['items', 'next'] };
}

export async function warned<T>(change: Promise<Changed<T>>): Promise<T & { readonly warnings: readonly string[] }> {
  const { result, warnings } = await change;
  return { ...result, warnings };
}

/** A page of a list the store returns whole in a stable order: the cursor is the offset where the page ended. */
export function paginate<T>(items: readonly T[], page: Page): { items: readonly T[]; next: string | null } {
  let start = 0;
  if (page.cursor !== undefined) {
    const offset = CURSOR.exec(Buffer.from(page.cursor, 'base64url').toString('latin1'))?.[1];
    if (offset === undefined) throw invalid('cursor is not one this API gave; pass the "next" of the previous page as it was', 'cursor');
    start = Number(offset);
  }
  const end = start + page.limit;
  return { items: items.slice(start, end), next: end < items.length ? Buffer.from(`o${end}`, 'latin1').toString('base64url') : null };
}
