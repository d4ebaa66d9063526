import * as grpc from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import diagnosticsChannel from 'node:diagnostics_channel';
import { connect as http2Connect, constants as http2Constants, type ClientHttp2Session } from 'node:http2';
import { connect as tcpConnect, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../src/config.js';
import { decide } from '../../src/decision/decide.js';
import { GRPC_LIMITS, grpcConnectionCap, openFileLimit, startGrpcServer, type AuthzGrpcServer, type GrpcLimits } from '../../src/envoy/grpc-server.js';
import { startHttpEndpoints, type HttpEndpointLimits, type HttpEndpoints } from '../../src/observe/http-endpoints.js';
import { createLogger } from '../../src/observe/logger.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { eventually } from '../support/eventually.js';
import { NO_SUNSET, snapshotOf } from '../support/snapshot.js';

/**
 * Idle connections and silent streams must be bounded: what a client may hold open on the
 * gRPC port and on the operator HTTP port, against real servers on 127.0.0.1. Time-outs are shortened
 * through the limits options so that the tests take seconds; production values are GRPC_LIMITS and
 * HTTP_ENDPOINT_LIMITS.
 */

const DEFAULTS = loadConfig({});
const KEY = '3b8f2d6e-1c4a-4e7b-9a2d-6f0e8c1b5a47';
const NOW = Date.parse('2026-06-01T00:00:00Z');
const SNAPSHOT = snapshotOf([{ siteId: '1001', keys: [{ key: KEY, keyId: '7' }], cidrs: ['203.0.113.0/24'] }]);
const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';
/** Slack for a loaded machine: a time-out must have acted within its value plus this. */
const SLACK_MS = 3_000;

const servers: Array<{ shutdown(graceMs: number): Promise<void> } | HttpEndpoints> = [];
after(async () => {
  for (const server of servers) await ('close' in server ? server.close() : server.shutdown(500));
});

async function grpcServer(limits: Partial<GrpcLimits>, maxBodyBytes = DEFAULTS.maxBodyBytes, onIncompleteRequestReset?: () => void, maxConnections = 10_000): Promise<AuthzGrpcServer> {
  const server = await startGrpcServer({
    ...(onIncompleteRequestReset ? { onIncompleteRequestReset } : {}),
    bindAddress: '127.0.0.1',
    port: 0,
    maxBodyBytes,
    maxConnections,
    limits,
    logger: createLogger('silent'),
    authorization: { clientIpSource: { kind: 'peer' }, maxBodyBytes, authorize: (input) => decide(input, SNAPSHOT, NOW, NO_SUNSET), logger: createLogger('silent') },
  });
  server.setServing(true);
  servers.push(server);
  return server;
}

async function httpEndpoints(limits: Partial<HttpEndpointLimits>): Promise<HttpEndpoints> {
  const endpoints = await startHttpEndpoints({ bindAddress: '127.0.0.1', port: 0, readiness: () => ({ ready: true, detail: {} }), limits });
  servers.push(endpoints);
  return endpoints;
}

/** Resolves with the milliseconds until the server closed the socket, or undefined if it still is open after withinMs. */
function closedWithin(socket: Socket | ClientHttp2Session, withinMs: number): Promise<number | undefined> {
  const started = performance.now();
  return new Promise((resolveClosed) => {
    const timer = setTimeout(() => resolveClosed(undefined), withinMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolveClosed(performance.now() - started);
    });
  });
}

/** A raw TCP connection that reads (so that it sees the server's FIN) and sends nothing. */
function silentSocket(port: number): Promise<Socket> {
  return new Promise((resolveSocket, reject) => {
    const socket = tcpConnect(port, '127.0.0.1', () => resolveSocket(socket));
    socket.on('error', reject);
    socket.resume();
  });
}

interface StreamEnd {
  /** grpc-status of the answer, if the server sent one. */
  readonly grpcStatus: number | undefined;
  /** The RST_STREAM code the stream closed with (NO_ERROR, REFUSED_STREAM, …). */
  readonly rstCode: number;
}

/** A Check stream whose request never completes: headers, then maybe part of a message, never END_STREAM. */
function incompleteCall(session: ClientHttp2Session, data?: Buffer): Promise<StreamEnd> {
  const stream = session.request(
    { ':method': 'POST', ':path': CHECK_PATH, 'content-type': 'application/grpc', te: 'trailers' },
    { endStream: false },
  );
  if (data) stream.write(data);
  let grpcStatus: number | undefined;
  const readStatus = (headers: Record<string, unknown>) => {
    if (headers['grpc-status'] !== undefined) grpcStatus = Number(headers['grpc-status']);
  };
  stream.on('response', readStatus);
  stream.on('trailers', readStatus);
  stream.on('error', () => undefined);
  stream.resume();
  return new Promise((resolveEnd) => stream.on('close', () => resolveEnd({ grpcStatus, rstCode: stream.rstCode ?? -1 })));
}

function h2session(port: number, options: { peerMaxConcurrentStreams?: number } = {}): ClientHttp2Session {
  const session = http2Connect(`http://127.0.0.1:${port}`, options);
  session.on('error', () => undefined);
  return session;
}

async function allowedCheck(port: number): Promise<void> {
  const client = authorizationClient(`127.0.0.1:${port}`);
  try {
    const body = JSON.stringify({ siteid: 1001, apikey: KEY });
    assert.equal(verdict(await check(client, { authorization: `1001:${KEY}`, body })), 'allow');
  } finally {
    client.close();
  }
}

describe('gRPC port: connections', () => {
  it('closes 500 TCP connections that never send the HTTP/2 preface, within the handshake time-out', async () => {
    const handshakeTimeoutMs = 500;
    const server = await grpcServer({ handshakeTimeoutMs, idleTimeoutMs: 60_000 });
    const sockets = await Promise.all(Array.from({ length: 500 }, () => silentSocket(server.port)));
    try {
      const closedAfter = await Promise.all(sockets.map((socket) => closedWithin(socket, handshakeTimeoutMs + SLACK_MS)));
      const open = closedAfter.filter((ms) => ms === undefined).length;
      assert.equal(open, 0, `${open} of 500 connections without a preface still open after ${handshakeTimeoutMs + SLACK_MS} ms`);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  it('at maxConnections, closes the oldest connection that has sent nothing to let a newcomer in, never one that sent the preface', async () => {
    const maxConnections = 4;
    // Silent connections would otherwise hold the port until this time-out: far beyond the test.
    const server = await grpcServer({ handshakeTimeoutMs: 60_000, silentConnectionGraceMs: 0 }, DEFAULTS.maxBodyBytes, undefined, maxConnections);
    const envoy = h2session(server.port);
    const ping = () => new Promise<void>((resolvePing, reject) => envoy.ping((error) => (error ? reject(error) : resolvePing())));
    await new Promise((connected) => envoy.once('connect', connected));
    // Answered only once the server has read the preface: the oldest connection has sent it.
    await ping();
    const silent = await Promise.all(Array.from({ length: maxConnections - 1 }, () => silentSocket(server.port)));
    try {
      const oldestSilentClosed = closedWithin(silent[0]!, SLACK_MS);
      await allowedCheck(server.port);
      assert.notEqual(await oldestSilentClosed, undefined, 'the oldest silent connection was not closed for the newcomer');
      await ping();
      assert.deepEqual(silent.slice(1).map((socket) => socket.destroyed || socket.readyState !== 'open'), [false, false]);
    } finally {
      envoy.close();
      for (const socket of silent) socket.destroy();
    }
  });

  it('keeps a connection that completed the handshake past the handshake time-out, and checks on it', async () => {
    const handshakeTimeoutMs = 300;
    const server = await grpcServer({ handshakeTimeoutMs, idleTimeoutMs: 60_000 });
    const session = h2session(server.port);
    try {
      assert.equal(await closedWithin(session, handshakeTimeoutMs + 1_000), undefined, 'a connection that spoke HTTP/2 was dropped');
      await allowedCheck(server.port);
    } finally {
      session.destroy();
    }
  });

  it('closes an HTTP/2 connection with no call open after the idle time-out', async () => {
    const idleTimeoutMs = 500;
    const server = await grpcServer({ idleTimeoutMs });
    const session = h2session(server.port);
    let goaway = false;
    session.on('goaway', () => (goaway = true));
    try {
      const closedAfter = await closedWithin(session, idleTimeoutMs + SLACK_MS);
      assert.notEqual(closedAfter, undefined, 'an idle connection was still open');
      assert.ok(goaway, 'the server should say GOAWAY, not just drop the connection');
    } finally {
      session.destroy();
    }
  });

  it("keeps a connection that Envoy pings often without calls (connection_keepalive), never GOAWAY too_many_pings", async () => {
    const server = await grpcServer({ idleTimeoutMs: 60_000 });
    const session = h2session(server.port);
    let goaway: number | undefined;
    session.on('goaway', (code: number) => (goaway = code));
    try {
      await new Promise<void>((resolveConnect) => session.once('connect', () => resolveConnect()));
      for (let ping = 0; ping < 50; ping += 1) {
        await new Promise<void>((resolvePing, reject) => {
          session.ping((error) => (error ? reject(error) : resolvePing()));
        });
        await sleep(10);
      }
      assert.equal(goaway, undefined, `the server sent GOAWAY with code ${goaway}`);
      assert.equal(session.closed || session.destroyed, false);
      await allowedCheck(server.port);
    } finally {
      session.destroy();
    }
  });
});

describe('gRPC port: streams', () => {
  it('ends the oldest incomplete requests once all connections together hold more bytes than the budget, and still answers checks', async () => {
    const budget = 512 * 1024;
    let resets = 0;
    // MAX_BODY_BYTES at its least, so that the budget is above one largest message (1 KiB + 256 KiB).
    const server = await grpcServer({ requestTimeoutMs: 60_000, idleTimeoutMs: 60_000, incompleteRequestBytesBudget: budget }, 1_024, () => (resets += 1));
    // 4 connections × 5 streams, each a message that announces 200,000 bytes and sends 100,000: 2 MB held without the budget.
    const partial = Buffer.alloc(5 + 100_000, 0x61);
    partial.writeUInt8(0, 0);
    partial.writeUInt32BE(200_000, 1);
    const sessions = Array.from({ length: 4 }, () => h2session(server.port));
    try {
      const ends = sessions.flatMap((session) => Array.from({ length: 5 }, () => incompleteCall(session, partial)));
      const fitting = Math.floor(budget / partial.length);
      const deadline = performance.now() + 10_000;
      while (resets < 20 - fitting && performance.now() < deadline) {
        assert.ok(server.incompleteRequestBytes <= budget, `${server.incompleteRequestBytes} bytes held, over the budget of ${budget}`);
        await sleep(20);
      }
      assert.ok(resets >= 20 - fitting, `only ${resets} incomplete requests ended; ${server.incompleteRequestBytes} bytes held`);
      assert.ok(server.incompleteRequestBytes <= budget, `${server.incompleteRequestBytes} bytes held, over the budget of ${budget}`);
      await allowedCheck(server.port);
      for (const session of sessions) session.destroy();
      const ended = await Promise.all(ends);
      assert.equal(ended.filter((end) => end.grpcStatus === grpc.status.RESOURCE_EXHAUSTED).length, resets, 'each request ended for the budget is told RESOURCE_EXHAUSTED');
    } finally {
      for (const session of sessions) session.destroy();
    }
  });

  it('opens at most maxConcurrentStreams calls per connection, and ends calls whose request never arrives', async () => {
    const requestTimeoutMs = 500;
    const server = await grpcServer({ requestTimeoutMs, idleTimeoutMs: 60_000 });
    // A client that ignores the server's SETTINGS and opens 1,000 streams at once, none sending a message.
    const session = h2session(server.port, { peerMaxConcurrentStreams: 2_000 });
    try {
      const ends = await Promise.race([
        Promise.all(Array.from({ length: 1_000 }, () => incompleteCall(session))),
        sleep(requestTimeoutMs + SLACK_MS).then(() => undefined),
      ]);
      assert.ok(ends, `silent streams still open after ${requestTimeoutMs + SLACK_MS} ms`);
      const refused = ends.filter((end) => end.rstCode === http2Constants.NGHTTP2_REFUSED_STREAM).length;
      const timedOut = ends.filter((end) => end.grpcStatus === grpc.status.DEADLINE_EXCEEDED);
      assert.ok(timedOut.length <= GRPC_LIMITS.maxConcurrentStreams, `${timedOut.length} streams were open at once`);
      assert.equal(refused + timedOut.length, 1_000, 'every stream is either refused or answered DEADLINE_EXCEEDED');
      assert.ok(
        timedOut.every((end) => end.rstCode === http2Constants.NGHTTP2_NO_ERROR),
        'an answered stream must be reset (NO_ERROR), not left half-open for the client to end',
      );
      // The connection is usable again: its streams were freed.
      const again = await incompleteCall(session);
      assert.equal(again.grpcStatus, grpc.status.DEADLINE_EXCEEDED);
    } finally {
      session.destroy();
    }
    await allowedCheck(server.port);
  });

  it('ends a call that sent part of its message, or all of it without END_STREAM', async () => {
    const requestTimeoutMs = 300;
    const server = await grpcServer({ requestTimeoutMs, idleTimeoutMs: 60_000 });
    const session = h2session(server.port);
    const partial = Buffer.from([0, 0, 0, 0, 100, 0x0a]); // promises 100 bytes, sends 1
    const whole = Buffer.from([0, 0, 0, 0, 0]); // an empty CheckRequest, but the stream stays open
    try {
      const ends = await Promise.race([
        Promise.all([incompleteCall(session, partial), incompleteCall(session, whole)]),
        sleep(requestTimeoutMs + SLACK_MS).then(() => undefined),
      ]);
      assert.ok(ends, 'an incomplete request was still open');
      for (const end of ends) assert.deepEqual(end, { grpcStatus: grpc.status.DEADLINE_EXCEEDED, rstCode: http2Constants.NGHTTP2_NO_ERROR });
    } finally {
      session.destroy();
    }
  });

  it('refuses a CheckRequest over MAX_BODY_BYTES plus header room with RESOURCE_EXHAUSTED, and decides one at the limit', async () => {
    const maxBodyBytes = 64 * 1024;
    const server = await grpcServer({}, maxBodyBytes);
    const client = authorizationClient(`127.0.0.1:${server.port}`);
    try {
      const fields = JSON.stringify({ siteid: 1001, apikey: KEY, padding: '' });
      const body = fields.replace('""', `"${'x'.repeat(maxBodyBytes - fields.length)}"`);
      assert.equal(Buffer.byteLength(body), maxBodyBytes);
      // Envoy's default max_request_headers_kb is 60.
      const headers = { 'x-padding': 'h'.repeat(59 * 1024) };
      assert.equal(verdict(await check(client, { authorization: `1001:${KEY}`, body, headers })), 'allow');

      const oversized = body.replace('"padding":"', `"padding":"${'x'.repeat(GRPC_LIMITS.messageHeadroomBytes)}`);
      await assert.rejects(check(client, { authorization: `1001:${KEY}`, body: oversized }), (error: grpc.ServiceError) => {
        assert.equal(error.code, grpc.status.RESOURCE_EXHAUSTED, `gRPC ${grpc.status[error.code]} instead of RESOURCE_EXHAUSTED`);
        return true;
      });
    } finally {
      client.close();
    }
  });
});

describe('gRPC connection cap and the open-file limit', () => {
  const procLimits = [
    'Limit                     Soft Limit           Hard Limit           Units     ',
    'Max processes             63431                63431                processes ',
    'Max open files            256                  4096                 files     ',
  ].join('\n');
  const cases: Array<[string, number, number | undefined, number]> = [
    ['as configured when the open-file limit is unknown', 1_024, undefined, 1_024],
    ['as configured when descriptors are plenty', 1_024, 1_048_576, 1_024],
    ['lowered to leave the reserve free', 1_024, 1_024, 896],
    ['lowered to half of a small limit, if that leaves more than the reserve', 1_024, 256, 128],
    ['half of a tiny limit', 1_024, 100, 50],
    ['lower configured values untouched', 64, 256, 64],
  ];
  for (const [name, configured, openFiles, expected] of cases) {
    it(`caps connections ${name}`, () => {
      assert.equal(grpcConnectionCap(configured, openFiles, GRPC_LIMITS.reservedFileDescriptors), expected);
    });
  }
  it('reads the soft limit from /proc/self/limits', () => {
    assert.equal(openFileLimit(procLimits), 256);
    assert.equal(openFileLimit('Max open files            unlimited            unlimited            files'), undefined);
  });
});

describe('operator HTTP port (/healthz, /readyz)', () => {
  const limits = { headersTimeoutMs: 500, connectionsCheckingIntervalMs: 100 };

  it('cuts off a slow-loris client that never finishes its headers', async () => {
    const endpoints = await httpEndpoints(limits);
    const socket = await silentSocket(endpoints.port);
    socket.write('GET /readyz HTTP/1.1\r\nHost: probe\r\n');
    const drip = setInterval(() => socket.write('x-drip: 1\r\n'), 100);
    try {
      const closedAfter = await closedWithin(socket, limits.headersTimeoutMs + SLACK_MS);
      assert.notEqual(closedAfter, undefined, 'a client dripping headers was never cut off');
    } finally {
      clearInterval(drip);
      socket.destroy();
    }
  });

  it('closes a connection that sends nothing', async () => {
    const endpoints = await httpEndpoints(limits);
    const socket = await silentSocket(endpoints.port);
    try {
      assert.notEqual(await closedWithin(socket, limits.headersTimeoutMs + SLACK_MS), undefined);
    } finally {
      socket.destroy();
    }
  });

  it('at maxConnections, replaces the oldest connection that has sent nothing once its grace is over, so a probe is answered at once', { timeout: 10_000 }, async () => {
    const maxConnections = 4;
    const endpoints = await httpEndpoints({ ...limits, maxConnections, newConnectionGraceMs: 0 });
    const held = await Promise.all(Array.from({ length: maxConnections }, () => silentSocket(endpoints.port)));
    try {
      await sleep(50);
      const oldestClosed = closedWithin(held[0]!, 1_000);
      const response = await fetch(`http://127.0.0.1:${endpoints.port}/readyz`);
      assert.equal(response.status, 200);
      assert.notEqual(await oldestClosed, undefined, 'the oldest idle connection was kept at the cap');
    } finally {
      for (const socket of held) socket.destroy();
    }
  });

  it('at maxConnections, a burst of connections does not close a probe whose request comes just after it connected', { timeout: 10_000 }, async () => {
    const [maxConnections, maxConnectionsWithNewcomers, burst] = [4, 8, 32];
    const endpoints = await httpEndpoints({ ...limits, headersTimeoutMs: 5_000, maxConnections, maxConnectionsWithNewcomers });
    // The probe is accepted first, then the burst, and only then is its request read: as when a
    // server busy with a flood of connections accepts many before it reads any of them.
    const probe = await silentSocket(endpoints.port);
    let answer = '';
    probe.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    const probeClosed = closedWithin(probe, 8_000);
    const others = await Promise.all(Array.from({ length: burst }, () => silentSocket(endpoints.port)));
    let othersClosed = 0;
    for (const socket of others) socket.on('close', () => (othersClosed += 1));
    try {
      // Every connection of the burst has been accepted once the cap has closed those beyond it.
      await eventually('the burst closed beyond the cap', async () => othersClosed, (closed) => closed >= burst + 1 - maxConnectionsWithNewcomers, 5_000);
      probe.write('GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n');
      assert.notEqual(await probeClosed, undefined, 'the probe was neither answered nor closed');
      assert.match(answer, /^HTTP\/1\.1 200 /, `the probe was closed without its answer (got ${JSON.stringify(answer.slice(0, 40))})`);
    } finally {
      probe.destroy();
      for (const socket of others) socket.destroy();
    }
  });

  it('answers requests pipelined within the limit one after another, in order', async () => {
    const endpoints = await httpEndpoints(limits);
    const socket = await silentSocket(endpoints.port);
    let answers = '';
    socket.on('data', (chunk: Buffer) => (answers += chunk.toString('latin1')));
    socket.write(['/healthz', '/readyz', '/nowhere'].map((path, i) => `GET ${path} HTTP/1.1\r\nHost: probe\r\n${i === 2 ? 'Connection: close\r\n' : ''}\r\n`).join(''));
    try {
      assert.notEqual(await closedWithin(socket, SLACK_MS), undefined, 'the connection was not closed after its last answer');
      assert.deepEqual([...answers.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((match) => match[1]), ['200', '200', '404']);
    } finally {
      socket.destroy();
    }
  });

  it('answers requests that arrive a byte at a time, pipelined, with long headers, in order', async () => {
    // Time enough for the slowest machine: this is about what the bytes add up to, not about time-outs.
    const endpoints = await httpEndpoints({ ...limits, headersTimeoutMs: 60_000 });
    const socket = await silentSocket(endpoints.port);
    socket.setNoDelay(true);
    let answers = '';
    socket.on('data', (chunk: Buffer) => (answers += chunk.toString('latin1')));
    const padding = `X-Padding: ${'p'.repeat(3_000)}\r\n`;
    const requests = ['/healthz', '/nowhere', '/readyz'].map((path, i) => `GET ${path} HTTP/1.1\r\nHost: probe\r\n${padding}${i === 2 ? 'Connection: close\r\n' : ''}\r\n`).join('');
    try {
      for (const byte of Buffer.from(requests, 'latin1')) {
        if (socket.destroyed) break;
        // Each byte its own write, and the event loop let through between them, so they arrive as separate chunks.
        await new Promise<void>((written) => socket.write(Buffer.of(byte), () => setImmediate(written)));
      }
      assert.notEqual(await closedWithin(socket, SLACK_MS), undefined, 'the connection was not closed after its last answer');
      assert.deepEqual([...answers.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((match) => match[1]), ['200', '404', '200']);
    } finally {
      socket.destroy();
    }
  });

  it('disconnects a connection that pipelines 2,000 requests before node:http parses more than the first, and answers a probe meanwhile', { timeout: 10_000 }, async () => {
    const endpoints = await httpEndpoints({ ...limits, maxPipelinedRequests: 4 });
    // node:http announces on this channel each request it has parsed, whatever becomes of it.
    let parsed = 0;
    const count = () => (parsed += 1);
    diagnosticsChannel.subscribe('http.server.request.start', count);
    const flood = await Promise.all(Array.from({ length: 8 }, () => silentSocket(endpoints.port)));
    try {
      let answered = 0;
      const closing = flood.map((socket) => closedWithin(socket, SLACK_MS));
      for (const socket of flood) {
        socket.on('data', (chunk: Buffer) => (answered += chunk.length));
        socket.write('GET /healthz HTTP/1.1\r\nHost: flood\r\n\r\n'.repeat(2_000));
      }
      const probe = await fetch(`http://127.0.0.1:${endpoints.port}/healthz`);
      assert.equal(probe.status, 200);
      const closed = await Promise.all(closing);
      assert.equal(closed.filter((ms) => ms === undefined).length, 0, 'a connection pipelining 2,000 requests was kept');
      assert.ok(parsed <= 1 + flood.length, `node:http parsed ${parsed} requests for 8 connections pipelining 2,000 each and one probe`);
      assert.ok(answered < 8 * 4 * 200, `${answered} bytes answered to the flood`);
    } finally {
      diagnosticsChannel.unsubscribe('http.server.request.start', count);
      for (const socket of flood) socket.destroy();
    }
  });
});
