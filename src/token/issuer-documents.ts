import type { JSONWebKeySet, JWK } from 'jose';
import { isSecureOrLoopbackUrl } from '../config.js';
import { discoveryUrls, isObject, readBounded, type IssuerLimits } from './issuer-http.js';

class IssuerDocumentError extends Error {
  override readonly name = 'IssuerDocumentError';
}

class KeySetError extends Error {
  override readonly name = 'KeySetError';
}

export type ReadLimits = Omit<IssuerLimits, 'deadline'>;

/** More keys than any issuer publishes at once (a few, overlapping while it rotates): the rest are dropped. */
export const KEY_SET_MAX_KEYS = 64;

// `oct` is a shared secret, never a public key.
const PUBLIC_KEY_TYPES: ReadonlySet<string> = new Set(['RSA', 'EC', 'OKP', 'AKP']);

// Private members (RFC 7518 §6, RFC 8037 §2): an issuer's mistake that must not be copied into our database.
const PRIVATE_MEMBERS: ReadonlySet<string> = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k', 'priv']);

function publicKey(value: unknown): JWK | undefined {
  if (!isObject(value) || typeof value['kty'] !== 'string' || !PUBLIC_KEY_TYPES.has(value['kty'])) return undefined;
  const members = Object.keys(value)
    .filter((name) => !PRIVATE_MEMBERS.has(name))
    .sort();
  return Object.fromEntries(members.map((name) => [name, value[name]])) as JWK;
}

/** From the issuer or the database, both hostile: public keys only, members sorted so equal sets read the same. */
export function publicKeySet(value: unknown): JSONWebKeySet {
  if (!isObject(value) || !Array.isArray(value['keys'])) throw new KeySetError('the key set has no "keys" array');
  const keys = value['keys'].flatMap((key) => publicKey(key) ?? []).slice(0, KEY_SET_MAX_KEYS);
  // An empty set verifies nothing: held or stored, it would refuse every token while counting as keys.
  if (keys.length === 0) throw new KeySetError('the key set holds no public signature key');
  return { keys };
}

/** One bounded GET of a JSON document; no redirects, which could lead off a configured URL. */
async function fetchJson(url: string, accept: string, what: string, limits: ReadLimits): Promise<unknown> {
  const response = await fetch(url, { headers: { accept }, redirect: 'error', signal: AbortSignal.timeout(limits.timeoutMs) });
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new IssuerDocumentError(`the ${what} URL answered HTTP ${response.status}`);
  }
  const text = await readBounded(response, limits.maxBytes, (detail) => new IssuerDocumentError(`the ${what} ${detail}`));
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new IssuerDocumentError(`the ${what} is not JSON`);
  }
}

export async function fetchKeySet(url: string, limits: ReadLimits): Promise<JSONWebKeySet> {
  return publicKeySet(await fetchJson(url, 'application/jwk-set+json, application/json', 'JWKS', limits));
}

async function jwksUrlOf(metadataUrl: string, issuer: string, limits: ReadLimits): Promise<string> {
  const document = await fetchJson(metadataUrl, 'application/json', 'discovery document', limits);
  const fields: Record<string, unknown> = isObject(document) ? document : {};
  // RFC 8414 §3.3, OpenID Connect Discovery §4.3: the document must be the issuer's own.
  if (fields['issuer'] !== issuer) throw new IssuerDocumentError(`the discovery document names the issuer ${JSON.stringify(fields['issuer'])}, not ${issuer}`);
  const jwksUri = fields['jwks_uri'];
  if (typeof jwksUri !== 'string') throw new IssuerDocumentError('the discovery document has no jwks_uri');
  if (!isSecureOrLoopbackUrl(jwksUri)) throw new IssuerDocumentError("the discovery document's jwks_uri is not an https:// URL (http:// only on loopback)");
  return jwksUri;
}

/** Read again on each call (an issuer may move its JWKS); the document that answered last is tried first. */
export function jwksDiscovery(issuer: string): (limits: ReadLimits) => Promise<string> {
  let answered: string | undefined;
  return async (limits) => {
    const urls = discoveryUrls(issuer);
    const ordered = answered === undefined ? urls : [answered, ...urls.filter((url) => url !== answered)];
    let failure: unknown;
    for (const url of ordered) {
      try {
        const jwksUrl = await jwksUrlOf(url, issuer, limits);
        answered = url;
        return jwksUrl;
      } catch (error) {
        failure = error;
      }
    }
    throw failure;
  };
}
