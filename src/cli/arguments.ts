import { canonicalPositiveId } from '../common/positive-id.js';
import { canonicalApiKey, maskApiKeysIn } from '../decision/api-key.js';
import { canonicalSiteId } from '../decision/parse-authorization.js';
import type { ApiKey, ClientId, KeyId, SiteAuthMethod, SiteId } from '../decision/types.js';
import { coversIpv4Mapped, parseAllowlistEntry, type AllowlistEntry } from '../allowlist/allowlist-entry.js';
import { IPV4_MAPPED } from '../allowlist/client-ip.js';
import { parseInstant } from '../common/sunset-values.js';
import { isSecureOrLoopbackUrl } from '../config.js';
import { CLIENT_ID_MAX_CHARS, isClientId } from '../common/client-id.js';

/** A command line that cannot be carried out as typed; the message says what to type instead. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

// The forms the arguments take, written once for both the refusal and `--help`.
export const SITE_ID_FORM = 'a positive whole number with no sign, spaces or leading zero, at most 9223372036854775807, e.g. 1001';
export const KEY_ID_FORM = 'the number in the KEY ID column of `sitekey-authz key list <site>`, e.g. 12';
export const EXPIRES_FORM = 'an ISO 8601 date or time with a zone';
export const EXPIRES_EXAMPLES = ['2027-01-31', '2027-01-31T12:00:00Z'] as const;
// Not a UUID, so the masking of every CLI message (maskApiKeysIn) leaves it readable, and plainly no real key.
export const API_KEY_FORM = 'a UUID such as xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx';
// Control characters (C0, DEL and C1) would garble `site list` and `key list` in a terminal.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// Invisible direction marks, embeddings, overrides and isolates make text display other than it
// reads ("Trojan Source", CVE-2021-42574); right-to-left letters display correctly without them.
const DIRECTION_CONTROL = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** The longest site name and note, in characters: shown in one line of `site list` and `key list`. */
export const MAX_NAME = 200;
export const MAX_NOTE = 500;

export const CLIENT_ID_FORM = `the OAuth client id the issuer puts in the token's client_id claim: 1 to ${CLIENT_ID_MAX_CHARS} visible ASCII characters, no spaces, e.g. partner-1001`;
const SITE_AUTH_METHODS: readonly SiteAuthMethod[] = ['both', 'tokens'];

export function clientIdArgument(text: string): ClientId {
  if (!isClientId(text)) {
    throw new UsageError(`${JSON.stringify(text.slice(0, 64))} is not a client id: expected ${CLIENT_ID_FORM}`);
  }
  return text;
}

export function authMethodArgument(text: string): SiteAuthMethod {
  const method = SITE_AUTH_METHODS.find((known) => known === text.toLowerCase());
  if (method === undefined) throw new UsageError(`${JSON.stringify(text.slice(0, 64))} is not a method: type both (API keys and tokens) or tokens (tokens only)`);
  return method;
}

export function siteIdArgument(text: string): SiteId {
  const siteId = canonicalSiteId(text);
  if (siteId === undefined) {
    throw new UsageError(
      `"${text}" is not a site id: expected ${SITE_ID_FORM}`,
    );
  }
  return siteId;
}

export function keyIdArgument(text: string): KeyId {
  if (canonicalPositiveId(text) === undefined) {
    const whatItIs = canonicalApiKey(text) === undefined ? `"${text}" is not a key id` : 'that is an API key, not a key id';
    throw new UsageError(`${whatItIs}: expected ${KEY_ID_FORM}`);
  }
  return text;
}

/** The network arguments of `ip allow` and `ip revoke`; every bad one is named at once. */
export function allowlistArguments(texts: readonly string[]): AllowlistEntry[] {
  const parsed = texts.map(parseAllowlistEntry);
  const reasons = parsed.flatMap((result) => (result.ok ? [] : [result.reason]));
  if (reasons.length > 0) throw new UsageError(`${reasons.join('; ')} (nothing was changed)`);
  const entries = parsed.flatMap((result) => (result.ok ? [result.entry] : []));
  return [...new Map(entries.map((entry) => [entry.cidr, entry])).values()];
}

/** What `ip allow` warns of, though it adds them: an entry that admits everyone, and IPv6 that IPv4 clients never match. */
export function allowlistWarnings(siteId: SiteId, entries: readonly AllowlistEntry[]): string[] {
  return [
    ...entries
      .filter((entry) => entry.prefix === 0)
      .map(({ cidr }) => `${cidr} admits every ${cidr.includes(':') ? 'IPv6' : 'IPv4'} address: the allowlist no longer restricts site ${siteId}`),
    ...entries.filter(coversIpv4Mapped).map(
      ({ cidr }) =>
        `${cidr} does not admit IPv4 clients, although it covers their IPv4-mapped form ${IPV4_MAPPED.network}/${IPV4_MAPPED.prefix}: IPv4 clients match IPv4 entries only. ` +
        `To admit them, run \`sitekey-authz ip allow ${siteId} <IPv4 network>\`, e.g. 203.0.113.0/24`,
    ),
  ];
}

/** An ISO 8601 date (midnight UTC) or date-time with a zone, for `--<option>`. */
export function instantOption(option: string, text: string): Date {
  const at = parseInstant(text, { dateAlone: true });
  if (at === undefined) {
    throw new UsageError(
      `--${option} "${text}" is not an ISO 8601 date or time with a zone on a day the calendar has; try --${option} 2027-01-31 or --${option} 2027-01-31T12:00:00Z`,
    );
  }
  return new Date(at);
}

/** `--expires`: an ISO 8601 date or date-time with zone, in the future. */
export function expiresOption(text: string | undefined, now: number): Date | undefined {
  if (text === undefined) return undefined;
  const epochMs = parseInstant(text, { dateAlone: true });
  const at = epochMs === undefined ? undefined : new Date(epochMs);
  if (at === undefined) {
    const examples = EXPIRES_EXAMPLES.map((example) => `--expires ${example}`).join(' or ');
    throw new UsageError(`--expires "${text}" is not ${EXPIRES_FORM}; try ${examples}`);
  }
  if (at.getTime() <= now) throw new UsageError(`--expires ${text} is in the past; a key must expire after it is issued`);
  return at;
}

/** How long a rolled key keeps working by default: a week for the partner to swap in the new one. */
export const ROLL_OVERLAP_DAYS = 7;

/** `--old-expires`: when the key being rolled stops, in the future; by default ROLL_OVERLAP_DAYS from now. */
export function oldExpiresOption(text: string | undefined, now: number): Date {
  if (text === undefined) return new Date(now + ROLL_OVERLAP_DAYS * 86_400_000);
  const at = instantOption('old-expires', text);
  if (at.getTime() <= now) throw new UsageError(`--old-expires ${text} is in the past; the old key must keep working for a while, e.g. ${ROLL_OVERLAP_DAYS} days (the default)`);
  return at;
}

/** `--since N`: a whole number of days or hours, at least 1 and at most `max`. */
export function countOption(option: string, text: string | undefined, unit: string, fallback: number, max: number): number {
  if (text === undefined) return fallback;
  if (!/^[1-9][0-9]*$/.test(text) || Number(text) > max) {
    throw new UsageError(`--${option} "${text}" is not a number of ${unit} from 1 to ${max}; try --${option} ${fallback}`);
  }
  return Number(text);
}

/**
 * `--name`, `--note`, `--actor`: short, printable text, measured in characters (code points), with every
 * UUID in it masked, since a note such as "replaces <key>" would otherwise store and show a full key.
 */
export function textOption(option: string, text: string | undefined, maxLength: number, fallback = ''): string {
  if (text === undefined) return fallback;
  if (CONTROL.test(text)) {
    throw new UsageError(`--${option} must not contain control characters such as newlines or tabs; type it on one line, with spaces`);
  }
  const direction = DIRECTION_CONTROL.exec(text)?.[0];
  if (direction !== undefined) {
    const codePoint = `U+${(direction.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
    throw new UsageError(
      `--${option} must not contain the invisible direction control ${codePoint}, which makes text display other than it reads; ` +
        'type the text without it (right-to-left letters need none)',
    );
  }
  const length = [...text].length;
  if (length > maxLength) throw new UsageError(`--${option} is ${length} characters long; keep it to ${maxLength}`);
  return maskApiKeysIn(text);
}

// The nil and max UUIDs (RFC 9562 §5.9, §5.10) are placeholders, never a secret: anyone would guess them.
const PLACEHOLDER_KEYS = new Set(['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff']);

/** `key import` reads the key from standard input so that it never lands in shell history. */
export function importedKeyArgument(input: string): ApiKey {
  const lines = input.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== '');
  const key = lines.length === 1 ? canonicalApiKey(lines[0] ?? '') : undefined;
  if (key !== undefined && PLACEHOLDER_KEYS.has(key)) {
    throw new UsageError(
      `standard input holds the ${key.startsWith('0') ? 'nil (all-zero)' : 'max (all-f)'} UUID, a placeholder anyone would guess, not a key; ` +
        'import the key the partner really uses, or issue a random one with `sitekey-authz key issue <site>`',
    );
  }
  if (key === undefined) {
    // The input is never echoed: it may be a real key with a typo.
    throw new UsageError(
      `standard input must hold exactly one API key, ${API_KEY_FORM}; ` +
        `got ${lines.length === 0 ? 'nothing' : lines.length === 1 ? 'a line that is not a UUID' : `${lines.length} lines`}. ` +
        'Try: sitekey-authz key import <site> < key.txt',
    );
  }
  return key;
}

export const MAX_PARTNER_JWKS_BYTES = 64 * 1024;
const MAX_PARTNER_KEYS = 10;
// RFC 7517 §9.3, RFC 7518 §6: the members that make a JWK private (and `k`, a shared secret).
const PRIVATE_KEY_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const PARTNER_KEY_TYPES = ['RSA', 'EC', 'OKP'];

/**
 * The partner's public keys for private_key_jwt, as a JWKS (RFC 7517 §5): public signing keys only.
 * A private member means the partner sent the key they sign with; it is refused, never stored or sent on.
 */
export function partnerJwksArgument(text: string): { readonly keys: Array<Record<string, unknown>> } {
  if (Buffer.byteLength(text) > MAX_PARTNER_JWKS_BYTES) throw new UsageError(`the partner's key set is larger than ${MAX_PARTNER_JWKS_BYTES / 1024} KiB; a JWKS of public keys is a few KiB`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError('the partner\'s key set is not JSON: expected a JWKS such as {"keys":[{"kty":"EC","crv":"P-256","x":"…","y":"…"}]}');
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_PARTNER_KEYS) {
    throw new UsageError(`the partner's key set must be a JWKS: an object whose "keys" holds 1 to ${MAX_PARTNER_KEYS} public keys`);
  }
  for (const [index, key] of keys.entries()) {
    if (typeof key !== 'object' || key === null || Array.isArray(key)) throw new UsageError(`key ${index + 1} of the partner's key set is not a JWK object`);
    const secret = PRIVATE_KEY_MEMBERS.find((member) => member in key);
    if (secret !== undefined) {
      throw new UsageError(
        `key ${index + 1} of the partner's key set is private (it has "${secret}"): ask the partner for their public keys only; the private key never leaves them, and this one should be replaced`,
      );
    }
    const kty = (key as { kty?: unknown }).kty;
    if (typeof kty !== 'string' || !PARTNER_KEY_TYPES.includes(kty)) throw new UsageError(`key ${index + 1} of the partner's key set has kty ${JSON.stringify(kty)}; expected one of ${PARTNER_KEY_TYPES.join(', ')}`);
    const use = (key as { use?: unknown }).use;
    if (use !== undefined && use !== 'sig') throw new UsageError(`key ${index + 1} of the partner's key set is for use ${JSON.stringify(use)}; the client signs its assertions: "sig"`);
  }
  return { keys: keys as Array<Record<string, unknown>> };
}

/** Where the partner publishes its public keys: https, or http on loopback (trying it out). */
export function partnerJwksUriArgument(text: string): string {
  const parsed = isSecureOrLoopbackUrl(text) ? new URL(text) : undefined;
  if (parsed === undefined || text.length > 2048 || parsed.username !== '' || parsed.password !== '') {
    throw new UsageError(`${JSON.stringify(text.slice(0, 100))} is not the URL of the partner's key set: expected https://… (http:// only on loopback), e.g. https://partner.example/.well-known/jwks.json`);
  }
  return parsed.href;
}
