import { createServer, type IncomingMessage } from 'node:http';
import { request as tlsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface ThrottlingProxy {
  /** e.g. http://127.0.0.1:41234/token: give it to a client as its token endpoint. */
  readonly url: string;
  /** Requests that reached the proxy, refused or passed on. */
  readonly requests: number;
  close(): Promise<void>;
}

const readAll = async (stream: IncomingMessage): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
};

/**
 * A token endpoint that is rate-limiting, as a busy authorization server's is: its first `refusals`
 * requests get 429 with `Retry-After: <retryAfterSeconds>`, the rest are passed unchanged to the real
 * https endpoint `target` (trusting `ca`), so a client's retry gets a real token.
 */
export async function startThrottlingProxy(target: string, ca: string, options: { refusals: number; retryAfterSeconds: number }): Promise<ThrottlingProxy> {
  let requests = 0;
  const server = createServer((incoming, outgoing) => {
    requests += 1;
    if (requests <= options.refusals) {
      outgoing.writeHead(429, { 'retry-after': String(options.retryAfterSeconds), 'content-type': 'application/json' });
      outgoing.end(JSON.stringify({ error: 'slow_down', error_description: 'too many token requests' }));
      return;
    }
    void readAll(incoming).then((body) => {
      const headers = { ...incoming.headers, host: new URL(target).host, 'content-length': String(body.length) };
      const forwarded = tlsRequest(target, { method: incoming.method, headers, ca, timeout: 10_000 }, (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      });
      forwarded.on('timeout', () => forwarded.destroy(new Error(`${target} did not answer within 10 s`)));
      forwarded.on('error', (error) => outgoing.writeHead(502).end(error.message));
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', resolveListen));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/token`,
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        server.closeAllConnections();
      }),
  };
}
