import { request as plainRequest } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Issued } from './certificates.js';

export interface TlsGateway {
  /** e.g. https://127.0.0.1:41234: the public origin, what ISSUER_URL names. */
  readonly url: string;
  /** From now on, requests go on to this plain-http origin (e.g. http://127.0.0.1:9470); until then, 503. */
  forwardTo(origin: string): void;
  close(): Promise<void>;
}

const UPSTREAM_TIMEOUT_MS = 10_000;

/**
 * The TLS-terminating gateway an issuer that serves plain http sits behind in production: https on
 * loopback with a certificate of the test's CA, each request passed unchanged (method, path, headers,
 * body) to the plain-http origin and its answer passed back. Started before the server behind it, whose
 * public URL it is.
 */
export async function startTlsGateway(certificate: Issued): Promise<TlsGateway> {
  let upstream: URL | undefined;
  const server = createServer({ cert: certificate.cert, key: certificate.key }, (incoming, outgoing) => {
    if (upstream === undefined) return void outgoing.writeHead(503).end();
    const target = new URL(incoming.url ?? '/', upstream);
    const forwarded = plainRequest(target, { method: incoming.method, headers: incoming.headers, timeout: UPSTREAM_TIMEOUT_MS }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    });
    forwarded.on('timeout', () => forwarded.destroy(new Error(`${target.origin} did not answer within ${UPSTREAM_TIMEOUT_MS / 1000} s`)));
    forwarded.on('error', (error) => (outgoing.headersSent ? outgoing.destroy() : outgoing.writeHead(502).end(error.message)));
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    forwardTo: (origin) => {
      upstream = new URL(origin);
    },
    close: () =>
      new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        // Kept-alive connections (fetch's, serve's key fetches) would hold close() open.
        server.closeAllConnections();
      }),
  };
}
