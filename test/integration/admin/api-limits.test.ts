import assert from 'node:assert/strict';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ADMIN_LIMITS } from '../../../src/admin/admin-server.js';
import { startAdminIssuer, type AdminIssuer } from '../../support/admin-issuer.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { startService, type RunningService } from '../../support/service.js';

/** The TCP ports a process listens on, from /proc (no ss or lsof needed). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set(
    readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
      try {
        return [/^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1] ?? ''];
      } catch {
        return [];
      }
    }),
  );
  return ['tcp', 'tcp6'].flatMap((table) =>
    readFileSync(`/proc/${pid}/net/${table}`, 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((fields) => fields[3] === '0A' && inodes.has(fields[9] ?? ''))
      .map((fields) => parseInt((fields[1] ?? '').split(':')[1] ?? '', 16)),
  );
}

/** A raw request, for what fetch will not send (a body larger than it says, a lying Content-Length). */
function rawRequest(url: string, options: { method: string; headers: Record<string, string | number>; body?: Buffer }): Promise<{ status: number; body: string }> {
  return new Promise((resolveAnswer, reject) => {
    const sent = httpRequest(url, { method: options.method, headers: options.headers }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolveAnswer({ status: response.statusCode ?? 0, body: text }));
    });
    sent.on('error', reject);
    sent.end(options.body);
  });
}

describe('the admin port is bounded, JSON only, paginated, and nowhere else', () => {
  let database: TestDatabase;
  let issuer: AdminIssuer;
  let service: RunningService;
  let token = '';
  let base = '';

  const get = (path: string) => fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const post = (path: string, body: string, type = 'application/json') =>
    fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': type }, body });
  const errorOf = async (response: Response) => ((await response.json()) as { error: { code: string; message: string } }).error;

  before(async () => {
    database = await freshDatabase();
    issuer = await startAdminIssuer();
    service = await startService({ DATABASE_URL: database.url, ...issuer.env() });
    base = service.adminBase ?? '';
    token = await issuer.tokenFor('admin');
  });

  after(async () => {
    await service?.stop();
    await issuer?.close();
    await database?.drop();
  });

  it('refuses a body over 64 KiB with 413, by Content-Length before reading and while reading a chunked one', async () => {
    const large = JSON.stringify({ id: '1001', name: 'x'.repeat(ADMIN_LIMITS.maxBodyBytes) });
    const declared = await post('/api/v1/sites', large);
    assert.equal(declared.status, 413);
    assert.equal((await errorOf(declared)).code, 'BODY_TOO_LARGE');
    const chunked = await rawRequest(`${base}/api/v1/sites`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      body: Buffer.from(large),
    });
    assert.equal(chunked.status, 413);
  });

  it('disconnects a client that never finishes its headers (slow-loris) within the header time-out', async () => {
    const socket = connect(Number(new URL(base).port), '127.0.0.1');
    const started = performance.now();
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.write('GET /api/v1/me HTTP/1.1\r\nHost: admin\r\nX-Slow: ');
    await new Promise<void>((resolveClose) => socket.on('close', () => resolveClose()));
    const elapsed = performance.now() - started;
    assert.ok(elapsed < ADMIN_LIMITS.headersTimeoutMs + 5_000, `closed after ${Math.round(elapsed)} ms`);
    assert.ok(answer === '' || answer.startsWith('HTTP/1.1 408'), answer);
  });

  it('takes JSON only: 415 for another type, 400 naming what is wrong with the JSON or its fields', async () => {
    const form = await post('/api/v1/sites', 'id=1001', 'application/x-www-form-urlencoded');
    assert.equal(form.status, 415);
    assert.match((await errorOf(form)).message, /Content-Type: application\/json/);
    const broken = await post('/api/v1/sites', '{"id": "1001",');
    assert.equal(broken.status, 400);
    const brokenError = await errorOf(broken);
    assert.equal(brokenError.code, 'INVALID_JSON');
    assert.match(brokenError.message, /^the body is not JSON: /);
    const cases: Array<[string, RegExp]> = [
      ['[]', /the body must be a JSON object, not an array/],
      ['{"name": "Acme"}', /the body needs the field "id"/],
      ['{"id": 1001}', /the field "id" must be a string, not a number/],
      ['{"id": "1001", "colour": "red"}', /unknown field "colour"; the fields are id, name/],
    ];
    for (const [body, message] of cases) {
      const response = await post('/api/v1/sites', body);
      assert.equal(response.status, 400, body);
      assert.match((await errorOf(response)).message, message);
    }
    const unknownQuery = await get('/api/v1/sites?querry=acme');
    assert.equal(unknownQuery.status, 400);
    assert.match((await errorOf(unknownQuery)).message, /unknown query parameter "querry"; it takes query, limit, cursor/);
  });

  it('pages lists with limit and cursor, and refuses a limit or cursor it did not give', async () => {
    for (const id of ['2001', '2002', '2003', '2004', '2005']) assert.equal((await post('/api/v1/sites', JSON.stringify({ id }))).status, 201);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = (await (await get(`/api/v1/sites?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`)).json()) as { items: Array<{ id: string }>; next: string | null };
      assert.ok(page.items.length <= 2);
      seen.push(...page.items.map((item) => item.id));
      cursor = page.next;
      pages += 1;
    } while (cursor !== null && pages < 10);
    assert.deepEqual(seen, ['2001', '2002', '2003', '2004', '2005']);
    assert.equal(pages, 3);

    const audit: string[] = [];
    let auditCursor: string | null = null;
    do {
      const page = (await (await get(`/api/v1/audit?action=site.add&limit=2${auditCursor === null ? '' : `&cursor=${auditCursor}`}`)).json()) as { items: Array<{ siteId: string }>; next: string | null };
      audit.push(...page.items.map((item) => item.siteId));
      auditCursor = page.next;
    } while (auditCursor !== null);
    assert.deepEqual(audit, ['2005', '2004', '2003', '2002', '2001'], 'the audit trail, newest first, each entry once');

    for (const query of ['limit=0', 'limit=1001', 'limit=ten', 'cursor=nonsense']) {
      const response = await get(`/api/v1/sites?${query}`);
      assert.equal(response.status, 400, query);
    }
  });

  it('answers 404 for an unknown path and 405 with Allow for a known path and another method, with the security headers', async () => {
    for (const path of ['/api/v1/nothing', '/api/v2/sites', '/api', '/', '/index.html']) {
      const response = await get(path);
      assert.equal(response.status, 404, path);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
      assert.equal((await errorOf(response)).code, 'NOT_FOUND');
    }
    const wrongMethod = await fetch(`${base}/api/v1/sunset`, { method: 'PATCH', headers: { authorization: `Bearer ${token}` } });
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get('allow'), 'GET, PUT');
  });

  it('never answers /api/ on the metrics port', async () => {
    for (const path of ['/api/v1/openapi.json', '/api/v1/sites']) {
      const response = await fetch(`${service.httpBase}${path}`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(response.status, 404, path);
      assert.doesNotMatch(await response.text(), /openapi|"items"/);
    }
  });

  it('never answers HTTP/1.1 /api/ on the Check port, which speaks gRPC only', async () => {
    const answer = await rawRequest(`http://${service.grpcTarget}/api/v1/openapi.json`, { method: 'GET', headers: {} }).catch((error: Error) => ({ status: -1, body: error.message }));
    assert.ok(answer.status !== 200, `the Check port answered ${answer.status}`);
    assert.doesNotMatch(answer.body, /openapi/);
  });

  it('opens no admin port without ADMIN_ISSUER', async () => {
    const plain = await startService({ DATABASE_URL: database.url });
    try {
      assert.equal(plain.adminBase, undefined);
      const ports = listeningPorts(plain.process.pid ?? 0).sort((a, b) => a - b);
      const expected = [Number(plain.grpcTarget.split(':')[1]), Number(new URL(plain.httpBase).port)].sort((a, b) => a - b);
      assert.deepEqual(ports, expected, 'only the Check and metrics ports');
      assert.doesNotMatch(plain.output(), /admin API listening/);
    } finally {
      await plain.stop();
    }
    assert.deepEqual(
      listeningPorts(service.process.pid ?? 0).sort((a, b) => a - b),
      [Number(service.grpcTarget.split(':')[1]), Number(new URL(service.httpBase).port), Number(new URL(base).port)].sort((a, b) => a - b),
      'with ADMIN_ISSUER, the admin port is the third',
    );
  });

  it('serves the admin port from the primary alone with WORKERS=2', async () => {
    const pooled = await startService({ DATABASE_URL: database.url, ...issuer.env(), WORKERS: '2' });
    try {
      const adminPort = Number(new URL(pooled.adminBase ?? '').port);
      assert.ok(listeningPorts(pooled.process.pid ?? 0).includes(adminPort), 'the primary listens on the admin port');
      const me = await fetch(`${pooled.adminBase}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(me.status, 200);
      assert.equal((pooled.output().match(/admin API listening/g) ?? []).length, 1, 'one admin server, not one per worker');
      assert.equal(await pooled.stop(), 0, 'a SIGTERM stops it with the rest');
    } finally {
      await pooled.stop();
    }
  });
});
