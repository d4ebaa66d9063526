import { canonicalPositiveId } from '../common/positive-id.js';
import { canonicalApiKey } from './api-key.js';
import type { ApiKey, HeaderRule, SiteId } from './types.js';

export type ParsedAuthorization =
  | { readonly ok: true; readonly method: 'api_key'; readonly siteId: SiteId; readonly apiKey: ApiKey; readonly submittedKey: string }
  | { readonly ok: true; readonly method: 'token' }
  | { readonly ok: false; readonly rule: HeaderRule };

// RFC 6750 §2.1: `Bearer` (any case, RFC 7235 §2.1), one or more spaces, then the token. Whether the
// token is a well-formed JWS is the verifier's to say (106), not the header's (108).
const BEARER = /^bearer +/i;
const BEARER_SCHEME_LENGTH = 'bearer'.length;

export function bearerToken(value: string | undefined): string | undefined {
  if (value === undefined || value.length <= BEARER_SCHEME_LENGTH || value.charCodeAt(BEARER_SCHEME_LENGTH) !== 0x20) return undefined;
  const scheme = BEARER.exec(value);
  return scheme === null ? undefined : value.slice(scheme[0].length);
}

export function canonicalSiteId(text: string): SiteId | undefined {
  return canonicalPositiveId(text);
}

/** Spec, Authentication 2: exactly `<Site-ID>:<API-Key>`, or a Bearer token (spec, Versioning 2). */
export function parseAuthorization(value: string | undefined): ParsedAuthorization {
  if (value === undefined || value === '') return { ok: false, rule: 'header-missing' };
  if (bearerToken(value) !== undefined) return { ok: true, method: 'token' };
  const colon = value.indexOf(':');
  if (colon < 0 || value.indexOf(':', colon + 1) >= 0) return { ok: false, rule: 'header-malformed' };
  const siteText = value.slice(0, colon);
  const keyText = value.slice(colon + 1);
  const siteId = canonicalSiteId(siteText);
  if (siteId === undefined) return { ok: false, rule: 'site-id-invalid' };
  const apiKey = canonicalApiKey(keyText);
  if (apiKey === undefined) return { ok: false, rule: 'api-key-invalid' };
  return { ok: true, method: 'api_key', siteId, apiKey, submittedKey: keyText };
}
