import { canonicalPositiveId, POSITIVE_ID_MAX } from '../common/positive-id.js';
import { CLIENT_ID_MAX_CHARS, isClientId } from '../common/client-id.js';
import { parseInstant } from '../common/sunset-values.js';
import { canonicalApiKey, maskApiKeysIn } from '../decision/api-key.js';
import { canonicalSiteId } from '../decision/parse-authorization.js';
import type { ApiKey, ClientId, KeyId, SiteAuthMethod, SiteId } from '../decision/types.js';
import { Refusal } from './refusal.js';

export function refuse(code: string, field: string | undefined, problem: string, example?: string, confirmedBy?: string): Refusal {
  return new Refusal(code, field, problem, example, confirmedBy);
}

export const SITE_ID_FORM = `a positive whole number with no sign, spaces or leading zero, at most ${POSITIVE_ID_MAX}, e.g. 1001`;
export const DATE_FORM = 'an ISO 8601 date or time with a zone';
export const DATE_EXAMPLES = ['2027-01-31', '2027-01-31T12:00:00Z'] as const;
// Not a UUID, so the masking of every message (maskApiKeysIn) leaves it readable, and plainly no real key.
export const API_KEY_FORM = 'a UUID such as xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx';
export const CLIENT_ID_FORM = `the OAuth client id the issuer puts in the token's client_id claim: 1 to ${CLIENT_ID_MAX_CHARS} visible ASCII characters, no spaces, e.g. partner-1001`;
export const MAX_NAME = 200;
export const MAX_NOTE = 500;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// Invisible direction marks, embeddings, overrides and isolates make text display other than it
// reads ("Trojan Source", CVE-2021-42574); right-to-left letters display correctly without them.
const DIRECTION_CONTROL = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
const SITE_AUTH_METHODS: readonly SiteAuthMethod[] = ['both', 'tokens'];
const quote = (text: string, max = 64) => JSON.stringify(text.slice(0, max));

export function siteIdOf(text: string | undefined, field = 'siteId'): SiteId {
  const siteId = canonicalSiteId(text ?? '');
  if (siteId === undefined) throw refuse('SITE_ID_INVALID', field, `${quote(text ?? '')} is not a site id: expected a positive whole number with no sign, spaces or leading zero, at most ${POSITIVE_ID_MAX}`, '1001');
  return siteId;
}

export function keyIdOf(text: string | undefined): KeyId {
  const given = text ?? '';
  if (canonicalPositiveId(given) !== undefined) return given;
  const whatItIs = canonicalApiKey(given) === undefined ? `${quote(given)} is not a key id` : 'that is an API key, not a key id';
  throw refuse('KEY_ID_INVALID', 'keyId', `${whatItIs}: expected the number the list of the site's keys shows for the key`, '12');
}

export function brownoutIdOf(text: string | undefined): string {
  if (canonicalPositiveId(text ?? '') === undefined) throw refuse('BROWNOUT_ID_INVALID', 'brownoutId', `${quote(text ?? '')} is not a brownout id: expected the number the list of brownouts shows`, '3');
  return text ?? '';
}

export function clientIdOf(text: string | undefined, field = 'clientId'): ClientId {
  if (text === undefined || !isClientId(text)) throw refuse('CLIENT_ID_INVALID', field, `${quote(text ?? '')} is not a client id: expected ${CLIENT_ID_FORM}`);
  return text;
}

export function authMethodOf(text: string | undefined): SiteAuthMethod {
  const method = SITE_AUTH_METHODS.find((known) => known === text?.toLowerCase());
  if (method === undefined) throw refuse('AUTH_METHOD_INVALID', 'method', `${quote(text ?? '')} is not a method: choose both (API keys and tokens) or tokens (tokens only)`, 'tokens');
  return method;
}

export function instantOf(text: string | undefined, field: string): Date {
  const at = text === undefined ? undefined : parseInstant(text, { dateAlone: true });
  if (at === undefined) throw refuse('DATE_INVALID', field, `${quote(text ?? '')} is not ${DATE_FORM} on a day the calendar has`, DATE_EXAMPLES.join(' or '));
  return new Date(at);
}

export function futureInstantOf(text: string | undefined, field: string, now: number, why: string): Date {
  const at = instantOf(text, field);
  if (at.getTime() <= now) throw refuse('DATE_IN_PAST', field, `${text} is in the past: ${why}; give a date after today`, nextYearExample(now));
  return at;
}

export function nextYearExample(now: number): string {
  return new Date(now + 365 * 86_400_000).toISOString().slice(0, 10);
}

export function countOf(text: string | undefined, field: string, unit: string, fallback: number, max: number): number {
  if (text === undefined) return fallback;
  if (!/^[1-9][0-9]*$/.test(text) || Number(text) > max) throw refuse('COUNT_INVALID', field, `${quote(text, 32)} is not a number of ${unit} from 1 to ${max}`, String(fallback));
  return Number(text);
}

/** Short printable text in code points, every UUID masked: a note such as "replaces <key>" must not store a key. */
export function textOf(text: string | undefined, field: string, maxLength: number, fallback = ''): string {
  if (text === undefined) return fallback;
  if (CONTROL.test(text)) throw refuse('TEXT_HAS_CONTROL', field, 'must not contain control characters such as newlines or tabs; write it on one line, with spaces');
  const direction = DIRECTION_CONTROL.exec(text)?.[0];
  if (direction !== undefined) {
    const codePoint = `U+${(direction.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
    throw refuse(
      'TEXT_HAS_DIRECTION_CONTROL',
      field,
      `must not contain the invisible direction control ${codePoint}, which makes text display other than it reads; write the text without it (right-to-left letters need none)`,
    );
  }
  const length = [...text].length;
  if (length > maxLength) throw refuse('TEXT_TOO_LONG', field, `is ${length} characters long; keep it to ${maxLength}`);
  return maskApiKeysIn(text);
}

// The nil and max UUIDs (RFC 9562 §5.9, §5.10) are placeholders, never a secret: anyone would guess them.
const PLACEHOLDER_KEYS = new Set(['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff']);

/** A key the partner already has, as typed or pasted: one UUID, never echoed back (it may be a real key with a typo). */
export function importedKeyOf(input: string): ApiKey {
  const lines = input.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== '');
  const key = lines.length === 1 ? canonicalApiKey(lines[0] ?? '') : undefined;
  if (key !== undefined && PLACEHOLDER_KEYS.has(key)) {
    throw refuse(
      'KEY_PLACEHOLDER',
      'key',
      `this is the ${key.startsWith('0') ? 'nil (all-zero)' : 'max (all-f)'} UUID, a placeholder anyone would guess, not a key; import the key the partner really uses, or issue a random one`,
    );
  }
  if (key === undefined) {
    const got = lines.length === 0 ? 'nothing' : lines.length === 1 ? 'a line that is not a UUID' : `${lines.length} lines`;
    throw refuse('KEY_INVALID', 'key', `must hold exactly one API key, ${API_KEY_FORM}; got ${got}`);
  }
  return key;
}
