import type { ApiKey, BodyCredentialsPolicy, BodyRule, BodyView, SiteId } from './types.js';

interface Member {
  readonly name: string;
  /** The member's value exactly as written, so a number is compared digit for digit. */
  readonly raw: string;
}

function skipWhitespace(text: string, at: number): number {
  let i = at;
  while (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r') i++;
  return i;
}

/** `at` is an opening quote; returns the index after the closing one. */
function endOfString(text: string, at: number): number {
  let i = at + 1;
  while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return i + 1;
}

function endOfValue(text: string, at: number): number {
  const first = text[at];
  if (first === '"') return endOfString(text, at);
  if (first === '{' || first === '[') {
    let depth = 0;
    let i = at;
    do {
      const c = text[i];
      if (c === '"') {
        i = endOfString(text, i);
        continue;
      }
      if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') depth--;
      i++;
    } while (depth > 0);
    return i;
  }
  let i = at;
  while (i < text.length && !',}] \t\n\r'.includes(text[i] ?? '')) i++;
  return i;
}

/**
 * The top-level members of a JSON object, duplicates kept. JSON.parse keeps only the last of a
 * repeated name while other parsers keep the first, so duplicates must be seen before parsing hides them.
 * Precondition: `text` is valid JSON whose top-level value is an object.
 */
function topLevelMembers(text: string): Member[] {
  const members: Member[] = [];
  let i = skipWhitespace(text, 0) + 1;
  for (;;) {
    i = skipWhitespace(text, i);
    if (text[i] === '}') return members;
    if (text[i] === ',') {
      i++;
      continue;
    }
    const nameEnd = endOfString(text, i);
    const name = JSON.parse(text.slice(i, nameEnd)) as string;
    const valueStart = skipWhitespace(text, skipWhitespace(text, nameEnd) + 1);
    const valueEnd = endOfValue(text, valueStart);
    members.push({ name, raw: text.slice(valueStart, valueEnd) });
    i = valueEnd;
  }
}

function parsesAsObject(text: string): boolean | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return undefined;
  }
}

/** A JSON number or string holding exactly the canonical decimal of the header's site id. */
function siteIdMatches(raw: string, siteId: SiteId): boolean {
  if (raw.startsWith('"')) return JSON.parse(raw) === siteId;
  return raw === siteId;
}

function apiKeyMatches(raw: string, apiKey: ApiKey): boolean {
  if (!raw.startsWith('"')) return false;
  return (JSON.parse(raw) as string).toLowerCase() === apiKey;
}

type CredentialField = 'siteid' | 'apikey';
const CREDENTIAL_FIELDS: readonly CredentialField[] = ['siteid', 'apikey'];

const ASCII = /^[\x00-\x7f]*$/;
const COMBINING_MARK = /\p{M}/gu;

/**
 * A name as a case-insensitive parser sees it. Go's encoding/json, for one, matches field names by
 * Unicode case folding, so `ſiteid` (U+017F) and `apiKey` (Kelvin sign) read as siteid and
 * apikey: upper- then lower-casing folds those, NFKD the compatibility forms, and dropping combining
 * marks the dotted `İ` that a Turkish-locale lower-casing turns into `i`. Being stricter than any
 * one parser only ever denies a body that holds two spellings of a credential field.
 */
function folded(name: string): string {
  if (ASCII.test(name)) return name.toLowerCase();
  return name.normalize('NFKD').replace(COMBINING_MARK, '').toUpperCase().toLowerCase();
}

/**
 * The members that an upstream parser might take for `field`. Names are compared case-insensitively
 * because an upstream that ignores case would read `SiteID` as `siteid`.
 */
function membersNamed(members: readonly Member[], field: CredentialField): Member[] {
  return members.filter((member) => folded(member.name) === field);
}

function fieldRule(members: readonly Member[], field: CredentialField, matches: (raw: string) => boolean): BodyRule | undefined {
  const member = membersNamed(members, field)[0];
  if (member === undefined || member.name !== field) return `${field}-missing`;
  return matches(member.raw) ? undefined : `${field}-mismatch`;
}

/**
 * Spec, Authentication 4: the body's siteid and apikey must equal the header's. Returns the rule a
 * request breaks (error 104), or undefined when the body credentials are acceptable.
 */
export function bodyCredentialsRule(
  body: BodyView,
  bodyPartial: boolean,
  policy: BodyCredentialsPolicy,
  expected: { readonly siteId: SiteId; readonly apiKey: ApiKey },
): BodyRule | undefined {
  if (bodyPartial) return 'body-partial';
  if (body.kind === 'not-utf8') return 'body-not-utf8';
  if (body.kind === 'empty') {
    if (body.lengthDeclared) return 'body-not-forwarded';
    return policy === 'optional' ? undefined : 'body-missing';
  }
  const isObject = parsesAsObject(body.text);
  if (isObject === undefined) return 'body-not-json';
  if (!isObject) return 'body-not-object';
  const members = topLevelMembers(body.text);
  // Repeats first: a parser-differential attack must be named as such whatever else is wrong.
  const repeated = CREDENTIAL_FIELDS.find((field) => membersNamed(members, field).length > 1);
  if (repeated) return `${repeated}-duplicate`;
  return (
    fieldRule(members, 'siteid', (raw) => siteIdMatches(raw, expected.siteId)) ??
    fieldRule(members, 'apikey', (raw) => apiKeyMatches(raw, expected.apiKey))
  );
}
