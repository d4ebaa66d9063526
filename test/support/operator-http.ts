import { get } from 'node:http';

export interface OperatorAnswer {
  readonly status: number | undefined;
  readonly body: string;
}

/**
 * GET on a connection of its own, as kubelet probes and a fresh scrape do. fetch() would reuse a
 * kept-alive connection, and one that serve's keep-alive time-out closes just as a request goes out
 * fails that request ("fetch failed"): a race of the client's, not an answer of serve's.
 */
export function operatorGet(url: string, timeoutMs = 5_000): Promise<OperatorAnswer> {
  return new Promise((resolveAnswer, reject) => {
    const request = get(url, { agent: false, timeout: timeoutMs }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolveAnswer({ status: response.statusCode, body }));
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`no answer from ${url} within ${timeoutMs} ms`)));
    request.on('error', reject);
  });
}
