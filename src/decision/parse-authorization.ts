import { canonicalApiKey } from './api-key.js';
import type { ApiKey, HeaderRule, SiteId } from './types.js';

export type ParsedAuthorization =
  | { readonly ok: true; readonly siteId: SiteId; readonly apiKey: ApiKey; readonly submittedKey: string }
  | { readonly ok: false; readonly rule: HeaderRule };

// A positive decimal with no sign, no leading zero and no spaces (issue #3, decision 1).
const SITE_ID = /^[1-9][0-9]{0,18}$/;
const BIGINT_MAX = 9_223_372_036_854_775_807n;
const BIGINT_MAX_DIGITS = BIGINT_MAX.toString().length;

/** The canonical site id for text that is one, else undefined; shared by the header and body checks and the CLI. */
export function canonicalSiteId(text: string): SiteId | undefined {
  if (!SITE_ID.test(text)) return undefined;
  // Only a 19-digit id can pass BIGINT_MAX; a BigInt for every check's id is garbage (issue #14).
  return text.length < BIGINT_MAX_DIGITS || BigInt(text) <= BIGINT_MAX ? text : undefined;
}

/** Spec, Authentication 2: `Authorization: <Site-ID>:<API-Key>`, exactly, nothing around it. */
export function parseAuthorization(value: string | undefined): ParsedAuthorization {
  if (value === undefined || value === '') return { ok: false, rule: 'header-missing' };
  const colon = value.indexOf(':');
  if (colon < 0 || value.indexOf(':', colon + 1) >= 0) return { ok: false, rule: 'header-malformed' };
  const siteText = value.slice(0, colon);
  const keyText = value.slice(colon + 1);
  const siteId = canonicalSiteId(siteText);
  if (siteId === undefined) return { ok: false, rule: 'site-id-invalid' };
  const apiKey = canonicalApiKey(keyText);
  if (apiKey === undefined) return { ok: false, rule: 'api-key-invalid' };
  return { ok: true, siteId, apiKey, submittedKey: keyText };
}
