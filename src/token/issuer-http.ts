/**
 * One bounded HTTP exchange with the token issuer, for discovery and client registration: a time-out,
 * a size limit on the answer, no redirects (every URL is configured, or named by the issuer's own
 * document, and a redirect could lead off it). The issuer may hang, flood or lie: each way it can
 * fail is an IssuerUnreachable (no usable answer) or an IssuerRefused (an answer that says no).
 */

export interface IssuerLimits {
  readonly timeoutMs: number;
  readonly maxBytes: number;
  /** The deadline of the whole operation the exchange is part of, over the time-out of each. */
  readonly deadline?: AbortSignal;
}

export const ISSUER_LIMITS: IssuerLimits = { timeoutMs: 10_000, maxBytes: 256 * 1024 };

/** The issuer gave no usable answer: unreachable, too slow, too large, not JSON. */
export class IssuerUnreachable extends Error {
  override readonly name = 'IssuerUnreachable';
}

// The issuer's words reach a terminal and a browser: visible ASCII and spaces only, and not many.
const MAX_ISSUER_TEXT = 300;
export function issuerText(value: unknown): string {
  return String(value).replace(/[^\x20-\x7e]/g, '?').slice(0, MAX_ISSUER_TEXT);
}

/** The issuer answered with an error (RFC 6749 §5.2 / RFC 7591 §3.2.2 shape when it gave one). */
export class IssuerRefused extends Error {
  override readonly name = 'IssuerRefused';
  constructor(
    readonly status: number,
    /** The OAuth error code, e.g. invalid_token or invalid_client_metadata; '' when it gave none. */
    readonly error: string,
    readonly description: string,
  ) {
    super(`HTTP ${status}${error === '' ? '' : ` ${error}`}${description === '' ? '' : `: ${description}`}`);
  }
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
  /** RFC 6750 bearer token: the initial or the registration access token. */
  readonly bearer?: string;
  readonly body?: unknown;
}

/** What a 2xx answered: the parsed JSON object, or undefined for an empty body (204). */
export type IssuerAnswer = { readonly status: number; readonly json: Record<string, unknown> | undefined };

/** The exchange; a non-2xx answer is an IssuerRefused with the issuer's error and description. */
export async function issuerRequest(request: IssuerRequest, limits: IssuerLimits = ISSUER_LIMITS): Promise<IssuerAnswer> {
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
  if (text.trim() !== '') {
    try {
      const parsed = JSON.parse(text) as unknown;
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) json = parsed as Record<string, unknown>;
    } catch {
      json = undefined;
    }
  }
  if (response.status < 200 || response.status > 299) {
    throw new IssuerRefused(response.status, json?.['error'] === undefined ? '' : issuerText(json['error']), json?.['error_description'] === undefined ? '' : issuerText(json['error_description']));
  }
  if (json === undefined && text.trim() !== '') throw new IssuerUnreachable(`${request.method} ${new URL(request.url).origin}: the answer is not a JSON object`);
  return { status: response.status, json };
}
