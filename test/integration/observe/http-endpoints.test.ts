import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startHttpEndpoints, type HttpEndpoints } from '../../../src/observe/http-endpoints.js';

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
