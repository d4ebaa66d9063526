import { CREDENTIAL_FIELDS, credentialFieldReader, isExactly, type CredentialField } from './credential-field.js';
import { scanJson } from './json-scan.js';
import type { ApiKey, BodyCredentialsPolicy, BodyRefusal, BodyView, SiteId } from './types.js';

/** How many members fold to one credential field, and where the first is. */
interface FieldMembers {
  count: number;
  nameStart: number;
  nameEnd: number;
  /** As written, so that a number is compared digit for digit. */
  valueStart: number;
  valueEnd: number;
}

const noMembers = (): FieldMembers => ({ count: 0, nameStart: 0, nameEnd: 0, valueStart: 0, valueEnd: 0 });

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** A string with no escape is its text between the quotes. */
function isPlainString(text: string, start: number, end: number): boolean {
  if (text.charCodeAt(start) !== QUOTE) return false;
  for (let i = start + 1; i < end - 1; i++) if (text.charCodeAt(i) === BACKSLASH) return false;
  return true;
}

function siteIdMatches(text: string, start: number, end: number, siteId: SiteId): boolean {
  const quoted = text.charCodeAt(start) === QUOTE;
  // Read in place when the value is written as the id itself; decoded only when it has escapes.
  if (!quoted || isPlainString(text, start, end)) {
    const from = quoted ? start + 1 : start;
    const to = quoted ? end - 1 : end;
    return to - from === siteId.length && text.startsWith(siteId, from);
  }
  return JSON.parse(text.slice(start, end)) === siteId;
}

function apiKeyMatches(text: string, start: number, end: number, apiKey: ApiKey): boolean {
  if (text.charCodeAt(start) !== QUOTE) return false;
  if (isPlainString(text, start, end) && end - start === apiKey.length + 2) {
    // An ASCII letter lower-cases by its 0x20 bit; a character beyond ASCII is left to toLowerCase.
    let ascii = true;
    for (let i = 0; i < apiKey.length && ascii; i++) {
      const c = text.charCodeAt(start + 1 + i);
      if (c >= 0x80) ascii = false;
      else if ((c >= 0x41 && c <= 0x5a ? c | 0x20 : c) !== apiKey.charCodeAt(i)) return false;
    }
    if (ascii) return true;
  }
  return (JSON.parse(text.slice(start, end)) as string).toLowerCase() === apiKey;
}

/** The first member a parser that ignores case might take for `field` must be `field`, with the header's value. */
function fieldRefusal(
  text: string,
  field: CredentialField,
  members: FieldMembers,
  matches: (valueStart: number, valueEnd: number) => boolean,
): BodyRefusal | undefined {
  if (members.count === 0 || !isExactly(text, members.nameStart, members.nameEnd, field)) return { rule: `${field}-missing` };
  return matches(members.valueStart, members.valueEnd) ? undefined : { rule: `${field}-mismatch` };
}

/**
 * Spec, Authentication 4: the body's siteid and apikey must equal the header's (104). A token request needs none,
 * but a siteid it carries must be the token's site, and a body not read whole is refused: it might name another.
 */
export function bodyCredentialsRule(
  body: BodyView,
  bodyPartial: boolean,
  policy: BodyCredentialsPolicy,
  expected: { readonly siteId: SiteId; readonly apiKey?: ApiKey },
): BodyRefusal | undefined {
  if (bodyPartial) return { rule: 'body-partial' };
  if (body.kind === 'too-large') return { rule: 'body-too-large', maxBodyBytes: body.maxBytes };
  if (body.kind === 'not-utf8') return { rule: 'body-not-utf8' };
  if (body.kind === 'empty') {
    if (body.lengthDeclared) return { rule: 'body-not-forwarded' };
    return policy === 'optional' || expected.apiKey === undefined ? undefined : { rule: 'body-missing' };
  }
  const { text } = body;
  const found: Record<CredentialField, FieldMembers> = { siteid: noMembers(), apikey: noMembers() };
  const fieldOf = credentialFieldReader(text);
  const shape = scanJson(text, (nameStart, nameEnd, valueStart, valueEnd) => {
    const field = fieldOf(nameStart, nameEnd);
    if (field === undefined) return;
    const members = found[field];
    if (members.count++ === 0) {
      members.nameStart = nameStart;
      members.nameEnd = nameEnd;
      members.valueStart = valueStart;
      members.valueEnd = valueEnd;
    }
  });
  if (shape === 'invalid') return { rule: 'body-not-json' };
  if (shape === 'not-object') return { rule: 'body-not-object' };
  // Repeats first: a parser-differential attack must be named as such whatever else is wrong.
  const { apiKey } = expected;
  if (apiKey === undefined) {
    if (found.siteid.count > 1) return { rule: 'siteid-duplicate' };
    if (found.siteid.count === 0) return undefined;
    return fieldRefusal(text, 'siteid', found.siteid, (start, end) => siteIdMatches(text, start, end, expected.siteId));
  }
  const repeated = CREDENTIAL_FIELDS.find((field) => found[field].count > 1);
  if (repeated) return { rule: `${repeated}-duplicate` };
  return (
    fieldRefusal(text, 'siteid', found.siteid, (start, end) => siteIdMatches(text, start, end, expected.siteId)) ??
    fieldRefusal(text, 'apikey', found.apikey, (start, end) => apiKeyMatches(text, start, end, apiKey))
  );
}
