import { isSecureOrLoopbackUrl } from '../config.js';

// The issuer may hang, flood or lie: each failure is an IssuerUnreachable (no usable answer) or an IssuerRefused.

export interface IssuerLimits {
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly deadline?: AbortSignal;
}

export const ISSUER_LIMITS: IssuerLimits = { timeoutMs: 10_000, maxBytes: 256 * 1024 };

export class IssuerUnreachable extends Error {
  override readonly name = 'IssuerUnreachable';
}

export class IssuerMetadataInvalid extends Error {
  override readonly name = 'IssuerMetadataInvalid';
}

// The issuer's words reach a terminal and a browser: visible ASCII and spaces only, and not many.
const MAX_ISSUER_TEXT = 300;
export function issuerText(value: unknown): string {
  return String(value).replace(/[^\x20-\x7e]/g, '?').slice(0, MAX_ISSUER_TEXT);
}

export class IssuerRefused extends Error {
  override readonly name = 'IssuerRefused';
  constructor(
    readonly status: number,
    /** The OAuth error code (RFC 6749 §5.2, RFC 7591 §3.2.2); '' when it gave none. */
    readonly error: string,
    readonly description: string,
  ) {
    super(`HTTP ${status}${error === '' ? '' : ` ${error}`}${description === '' ? '' : `: ${description}`}`);
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An answer's text, refused with `tooLarge('is … bytes …')` past maxBytes, declared or received. */
export async function readBounded(response: Response, maxBytes: number, tooLarge: (detail: string) => Error): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > maxBytes) throw tooLarge(`is ${declared} bytes, more than the ${maxBytes} accepted`);
  if (response.body === null) return '';
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of response.body) {
    received += chunk.byteLength;
    if (received > maxBytes) throw tooLarge(`is more than the ${maxBytes} bytes accepted`);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

export interface IssuerRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  readonly url: string;
  readonly bearer?: string;
  readonly body?: unknown;
}

/** Without redirects, which could lead off a configured URL; `json` is undefined for an empty body (204). */
export async function issuerRequest(
  request: IssuerRequest,
  limits: IssuerLimits = ISSUER_LIMITS,
): Promise<{ readonly status: number; readonly json: Record<string, unknown> | undefined }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (request.bearer !== undefined) headers['authorization'] = `Bearer ${request.bearer}`;
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  let text: string;
  try {
    response = await fetch(request.url, {
      method: request.method,
      headers,
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      redirect: 'error',
      signal: limits.deadline === undefined ? AbortSignal.timeout(limits.timeoutMs) : AbortSignal.any([AbortSignal.timeout(limits.timeoutMs), limits.deadline]),
    });
    text = await readBounded(response, limits.maxBytes, (detail) => new IssuerUnreachable(`the issuer's answer ${detail}`));
  } catch (error) {
    if (error instanceof IssuerUnreachable) throw error;
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
    const what =
      limits.deadline?.aborted === true
        ? 'the operation ran out of time'
        : (error as Error).name === 'TimeoutError'
          ? `no answer within ${limits.timeoutMs / 1000} s`
          : `the request failed (${issuerText(cause)})`;
    throw new IssuerUnreachable(`${request.method} ${new URL(request.url).origin}: ${what}`);
  }
  let json: Record<string, unknown> | undefined;
  try {
    const parsed = JSON.parse(text) as unknown;
    json = isObject(parsed) ? parsed : undefined;
  } catch {
    json = undefined;
  }
  if (response.status < 200 || response.status > 299) {
    throw new IssuerRefused(response.status, json?.['error'] === undefined ? '' : issuerText(json['error']), json?.['error_description'] === undefined ? '' : issuerText(json['error_description']));
  }
  if (json === undefined && text.trim() !== '') throw new IssuerUnreachable(`${request.method} ${new URL(request.url).origin}: the answer is not a JSON object`);
  return { status: response.status, json };
}

/** RFC 8414 §3.1 puts the well-known segment before the issuer's path; OpenID Connect Discovery §4 after it. */
export function discoveryUrls(issuer: string): readonly string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/+$/, '');
  return [`${url.origin}/.well-known/oauth-authorization-server${path}`, `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`];
}

export interface IssuerMetadata {
  readonly issuer: string;
  readonly tokenEndpoint: string;
  readonly registrationEndpoint: string | undefined;
}

function endpoint(document: Record<string, unknown>, name: string): string | undefined {
  const value = document[name];
  if (value === undefined) return undefined;
  if (!isSecureOrLoopbackUrl(value)) throw new IssuerMetadataInvalid(`the issuer's discovery document names a ${name} that is not an https:// URL (http:// only on loopback)`);
  return value as string;
}

/** Read now: an issuer may move its endpoints. The document must be the issuer's own (RFC 8414 §3.3). */
export async function discoverIssuer(issuer: string, limits: IssuerLimits = ISSUER_LIMITS): Promise<IssuerMetadata> {
  let document: Record<string, unknown> | undefined;
  const refusals: string[] = [];
  for (const url of discoveryUrls(issuer)) {
    try {
      document = (await issuerRequest({ method: 'GET', url }, limits)).json;
      break;
    } catch (error) {
      if (!(error instanceof IssuerRefused)) throw error;
      refusals.push(`${url} answered ${error.message}`);
    }
  }
  if (document === undefined) {
    if (refusals.length > 0) throw new IssuerUnreachable(`the issuer ${issuer} publishes no discovery document: ${refusals.join('; ')}`);
    throw new IssuerUnreachable(`the issuer ${issuer}'s discovery document is empty`);
  }
  if (document['issuer'] !== issuer) {
    throw new IssuerMetadataInvalid(`the discovery document at ${issuer} names the issuer ${JSON.stringify(String(document['issuer']).slice(0, 200))}, not ${issuer}: check TOKEN_ISSUER`);
  }
  const tokenEndpoint = endpoint(document, 'token_endpoint');
  if (tokenEndpoint === undefined) throw new IssuerMetadataInvalid(`the issuer ${issuer}'s discovery document has no token_endpoint`);
  return { issuer, tokenEndpoint, registrationEndpoint: endpoint(document, 'registration_endpoint') };
}
