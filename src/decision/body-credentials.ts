import { CREDENTIAL_FIELDS, credentialFieldReader, isExactly, type CredentialField } from './credential-field.js';
import { scanJson } from './json-scan.js';
import type { ApiKey, BodyCredentialsPolicy, BodyRefusal, BodyView, SiteId } from './types.js';

/** What the body says about one credential field: how many members fold to it, and the first. */
interface FieldMembers {
  count: number;
  nameStart: number;
  nameEnd: number;
  /** The first member's value exactly as written, so a number is compared digit for digit. */
  valueStart: number;
  valueEnd: number;
}

const noMembers = (): FieldMembers => ({ count: 0, nameStart: 0, nameEnd: 0, valueStart: 0, valueEnd: 0 });

/** A JSON number or string holding exactly the canonical decimal of the header's site id. */
function siteIdMatches(raw: string, siteId: SiteId): boolean {
  if (raw.startsWith('"')) return JSON.parse(raw) === siteId;
  return raw === siteId;
}

function apiKeyMatches(raw: string, apiKey: ApiKey): boolean {
  if (!raw.startsWith('"')) return false;
  return (JSON.parse(raw) as string).toLowerCase() === apiKey;
}

/**
 * The first member an upstream parser might take for `field` must be `field` itself, and hold the
 * header's value. Names are compared case-insensitively because an upstream that ignores case
 * would read `SiteID` as `siteid`.
 */
function fieldRefusal(text: string, field: CredentialField, members: FieldMembers, matches: (raw: string) => boolean): BodyRefusal | undefined {
  if (members.count === 0 || !isExactly(text, members.nameStart, members.nameEnd, field)) return { rule: `${field}-missing` };
  return matches(text.slice(members.valueStart, members.valueEnd)) ? undefined : { rule: `${field}-mismatch` };
}

/**
 * Spec, Authentication 4: the body's siteid and apikey must equal the header's. Returns the rule a
 * request breaks (error 104), or undefined when the body credentials are acceptable. The body is
 * read in one pass that builds nothing but the few members that may be credentials.
 */
export function bodyCredentialsRule(
  body: BodyView,
  bodyPartial: boolean,
  policy: BodyCredentialsPolicy,
  expected: { readonly siteId: SiteId; readonly apiKey: ApiKey },
): BodyRefusal | undefined {
  if (bodyPartial) return { rule: 'body-partial' };
  if (body.kind === 'too-large') return { rule: 'body-too-large', maxBodyBytes: body.maxBytes };
  if (body.kind === 'not-utf8') return { rule: 'body-not-utf8' };
  if (body.kind === 'empty') {
    if (body.lengthDeclared) return { rule: 'body-not-forwarded' };
    return policy === 'optional' ? undefined : { rule: 'body-missing' };
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
  const repeated = CREDENTIAL_FIELDS.find((field) => found[field].count > 1);
  if (repeated) return { rule: `${repeated}-duplicate` };
  return (
    fieldRefusal(text, 'siteid', found.siteid, (raw) => siteIdMatches(raw, expected.siteId)) ??
    fieldRefusal(text, 'apikey', found.apikey, (raw) => apiKeyMatches(raw, expected.apiKey))
  );
}
