import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { HTTP_ENDPOINT_LIMITS, startHttpEndpoints, type HttpEndpoints } from '../../../src/observe/http-endpoints.js';
import { eventually } from '../../support/eventually.js';
import { operatorGet } from '../../support/operator-http.js';

/** What one request to the operator port got back: status, the two headers every answer sets, and the body. */
async function answer(base: string, path: string, method = 'GET'): Promise<[number, string | null, string | null, string]> {
  const response = await fetch(`${base}${path}`, { method });
  return [response.status, response.headers.get('content-type'), response.headers.get('cache-control'), await response.text()];
}

const JSON_TYPE = 'application/json';
const NO_STORE = 'no-store';

describe('operator HTTP endpoints: what each path and method answers', () => {
  let ready = true;
  let endpoints: HttpEndpoints;
  let base: string;

  before(async () => {
    endpoints = await startHttpEndpoints({
      bindAddress: '127.0.0.1',
      port: 0,
      readiness: () => ({ ready, detail: { snapshot: { sites: 3 } } }),
    });
    base = `http://127.0.0.1:${endpoints.port}`;
  });

  after(async () => {
    await endpoints?.close();
  });

  it('answers GET /healthz 200 {"status":"ok"}, whatever the readiness', async () => {
    ready = false;
    assert.deepEqual(await answer(base, '/healthz'), [200, JSON_TYPE, NO_STORE, '{"status":"ok"}']);
    ready = true;
  });

  it('answers GET /readyz 200 with the detail while ready, 503 with it while not', async () => {
    assert.deepEqual(await answer(base, '/readyz'), [200, JSON_TYPE, NO_STORE, '{"status":"ready","snapshot":{"sites":3}}']);
    ready = false;
    assert.deepEqual(await answer(base, '/readyz?verbose=1'), [503, JSON_TYPE, NO_STORE, '{"status":"not ready","snapshot":{"sites":3}}']);
    ready = true;
  });

  it('answers HEAD like GET, without a body', async () => {
    assert.deepEqual(await answer(base, '/healthz', 'HEAD'), [200, JSON_TYPE, NO_STORE, '']);
    assert.deepEqual(await answer(base, '/readyz', 'HEAD'), [200, JSON_TYPE, NO_STORE, '']);
  });

  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
    for (const path of ['/healthz', '/readyz', '/nowhere']) {
      it(`answers ${method} ${path} 405 {"error":"use GET"}`, async () => {
        assert.deepEqual(await answer(base, path, method), [405, JSON_TYPE, NO_STORE, '{"error":"use GET"}']);
        assert.equal((await fetch(`${base}${path}`, { method })).headers.get('allow'), 'GET, HEAD');
      });
    }
  }

  for (const path of ['/', '/nowhere', '/healthz/', '/readyz/detail', '/HEALTHZ', '/metrics']) {
    it(`answers GET ${path} 404, naming the paths there are`, async () => {
      assert.deepEqual(await answer(base, path), [404, JSON_TYPE, NO_STORE, '{"error":"not found; try /healthz, /readyz or /metrics"}']);
    });
  }
});

describe('operator HTTP endpoints: places per source address', () => {
  let endpoints: HttpEndpoints;

  before(async () => {
    // A grace longer than the test: every silent connection stays a newcomer that may not be replaced.
    endpoints = await startHttpEndpoints({ bindAddress: '127.0.0.1', port: 0, readiness: () => ({ ready: true, detail: {} }), limits: { newConnectionGraceMs: 60_000 } });
  });

  after(async () => {
    await endpoints?.close();
  });

  it('answers a probe from one address while another holds more silent connections than there are places', async () => {
    const { maxConnectionsWithNewcomers } = HTTP_ENDPOINT_LIMITS;
    const flood = maxConnectionsWithNewcomers + 24;
    let closedByServe = 0;
    const sockets = Array.from({ length: flood }, () => {
      const socket = connect({ port: endpoints.port, host: '127.0.0.1', localAddress: '127.0.0.2' });
      socket.on('error', () => undefined);
      socket.on('close', () => (closedByServe += 1));
      return socket;
    });
    try {
      // Every one of them has been taken or turned away once the places are full and the rest closed.
      await eventually('the connections beyond the places closed', async () => closedByServe, (closed) => closed >= flood - maxConnectionsWithNewcomers, 20_000);
      const probe = await operatorGet(`http://127.0.0.1:${endpoints.port}/healthz`, 2_000).then(
        (answer) => answer.status,
        (error: NodeJS.ErrnoException) => error.code ?? error.message,
      );
      assert.equal(probe, 200);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });
});
