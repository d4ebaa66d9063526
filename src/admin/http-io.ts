import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from './api-error.js';

/** On every answer of the admin port: nothing is cached, nothing is sniffed, nothing is framed. */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

export function setSecurityHeaders(response: ServerResponse): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(name, value);
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  const text = JSON.stringify(body ?? null);
  setSecurityHeaders(response);
  response.writeHead(status, {
    // The API's answers are data, never a page: a browser that opens one runs nothing from it.
    'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

export function sendError(response: ServerResponse, error: ApiError): void {
  const consoleMessage = error.consoleMessage === undefined ? {} : { consoleMessage: error.consoleMessage };
  const field = error.field === undefined ? {} : { field: error.field };
  sendJson(response, error.status, { error: { code: error.code, ...field, message: error.message, ...consoleMessage } }, error.headers);
}

const JSON_MEDIA_TYPE = /^application\/json\s*(;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

function hasBody(request: IncomingMessage): boolean {
  return request.headers['transfer-encoding'] !== undefined || (request.headers['content-length'] !== undefined && request.headers['content-length'] !== '0');
}

export async function readJsonBody(request: IncomingMessage, maxBytes: number): Promise<unknown> {
  if (!hasBody(request)) return undefined;
  const type = request.headers['content-type'];
  if (type === undefined || !JSON_MEDIA_TYPE.test(type.trim())) {
    throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', `send the body as JSON with Content-Type: application/json${type === undefined ? '' : `, not ${JSON.stringify(type.slice(0, 100))}`}`);
  }
  const tooLarge = () => new ApiError(413, 'BODY_TOO_LARGE', `the body is larger than the ${maxBytes} bytes accepted`, { connection: 'close' });
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > maxBytes) throw tooLarge();
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of request) {
    received += (chunk as Buffer).length;
    if (received > maxBytes) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new ApiError(400, 'INVALID_JSON', 'the body is not UTF-8 text; send JSON encoded as UTF-8');
  }
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ApiError(400, 'INVALID_JSON', `the body is not JSON: ${(error as Error).message}`);
  }
}
