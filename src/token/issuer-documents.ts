import { readBounded } from './issuer-http.js';
import { isSecureOrLoopbackUrl } from '../config.js';

/** Why an issuer's document could not be read; said in the log line. */
export class IssuerDocumentError extends Error {
  override readonly name = 'IssuerDocumentError';
}

/** Bounds on one read: its time and the size of the answer. */
export interface ReadLimits {
  readonly timeoutMs: number;
  readonly maxBytes: number;
}

/**
 * One bounded GET of a JSON document: a time-out, a size limit, no redirects (the URL is configured,
 * or named by a document from a configured URL, and a redirect could lead off it).
 */
export async function fetchJson(url: string, accept: string, what: string, limits: ReadLimits): Promise<unknown> {
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

/**
 * Where an issuer's metadata is, in the order tried: RFC 8414 §3.1 puts the well-known segment
 * between the host and the issuer's path; OpenID Connect Discovery §4 appends it to the issuer.
 */
export function discoveryUrls(issuer: string): readonly string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/+$/, '');
  return [`${url.origin}/.well-known/oauth-authorization-server${path}`, `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`];
}

async function jwksUrlOf(metadataUrl: string, issuer: string, limits: ReadLimits): Promise<string> {
  const document = await fetchJson(metadataUrl, 'application/json', 'discovery document', limits);
  const fields = (typeof document === 'object' && document !== null ? document : {}) as Record<string, unknown>;
  // RFC 8414 §3.3, OpenID Connect Discovery §4.3: the document must be the issuer's own.
  if (fields['issuer'] !== issuer) throw new IssuerDocumentError(`the discovery document names the issuer ${JSON.stringify(fields['issuer'])}, not ${issuer}`);
  const jwksUri = fields['jwks_uri'];
  if (typeof jwksUri !== 'string') throw new IssuerDocumentError('the discovery document has no jwks_uri');
  if (!isSecureOrLoopbackUrl(jwksUri)) throw new IssuerDocumentError("the discovery document's jwks_uri is not an https:// URL (http:// only on loopback)");
  return jwksUri;
}

/**
 * The JWKS URL an issuer's discovery document names, held to the same rules as TOKEN_JWKS_URL: its
 * RFC 8414 authorization server metadata, else its OpenID Connect discovery document. The document
 * that answered last is tried first, so a steady issuer costs one request.
 */
export class JwksDiscovery {
  private answered: string | undefined;

  constructor(private readonly issuer: string) {}

  async jwksUrl(limits: ReadLimits): Promise<string> {
    const urls = discoveryUrls(this.issuer);
    const ordered = this.answered === undefined ? urls : [this.answered, ...urls.filter((url) => url !== this.answered)];
    let failure: unknown;
    for (const url of ordered) {
      try {
        const jwksUrl = await jwksUrlOf(url, this.issuer, limits);
        this.answered = url;
        return jwksUrl;
      } catch (error) {
        failure = error;
      }
    }
    throw failure;
  }
}
