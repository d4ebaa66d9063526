import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { authorizationClient, check, verdict } from './envoy-client.js';

/** What the partner's request came in as, for Envoy's DeniedHttpResponse status names (envoy.type.v3.StatusCode). */
const HTTP_STATUS: Readonly<Record<string, number>> = { Unauthorized: 401, Forbidden: 403, BadRequest: 400, TooManyRequests: 429 };
const MAX_BODY_BYTES = 1 << 20;

export interface CheckGateway {
  /** e.g. http://127.0.0.1:41234/v1/orders: where a partner's client sends its requests. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Envoy in front of the partner API, as far as a partner's HTTP client can tell: each request becomes a
 * Check over gRPC to the real service (from `sourceIp`, an allowlisted address), and the partner gets
 * the denial Envoy would send (status, headers, JSON body), or on an allow a 200 from the "upstream"
 * naming the site the service put in x-site-id.
 */
export async function startCheckGateway(grpcTarget: string, sourceIp: string): Promise<CheckGateway> {
  const client = authorizationClient(grpcTarget);
  const answer = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of request as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) return void response.writeHead(413).end();
      chunks.push(chunk);
    }
    const forwarded = Object.fromEntries(
      Object.entries(request.headers).filter((entry): entry is [string, string] => typeof entry[1] === 'string' && entry[0] !== 'host'),
    );
    const checked = await check(client, { authorization: request.headers.authorization, ip: sourceIp, body: Buffer.concat(chunks).toString('utf8'), headers: forwarded });
    if (verdict(checked) === 'allow') {
      const siteId = checked.ok_response?.headers.find((option) => option.header.key === 'x-site-id')?.header.value;
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ accepted: true, siteId }));
      return;
    }
    const denied = checked.denied_response;
    const headers = Object.fromEntries((denied?.headers ?? []).map((option) => [option.header.key, option.header.value]));
    response.writeHead(HTTP_STATUS[denied?.status.code ?? ''] ?? 500, headers).end(denied?.body ?? '');
  };
  const server = createServer((request, response) => {
    answer(request, response).catch((error: unknown) => response.writeHead(502).end(String(error)));
  });
  await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', resolveListen));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/orders`,
    close: () =>
      new Promise<void>((resolveClose) => {
        client.close();
        server.close(() => resolveClose());
        server.closeAllConnections();
      }),
  };
}
