import { Agent, get, type IncomingHttpHeaders } from 'node:http';
import { connect as tcpConnect, type Socket } from 'node:net';
import { Worker } from 'node:worker_threads';
import { ADMIN_ISSUER_KID } from './admin-issuer.js';

/*
 * Attacks on the operator port (METRICS_PORT) and the admin port, each as an attacker would send it, from this process:
 * for the regression tests (test/integration/operator-port-abuse.test.ts) and the abuse benchmark
 * (bench/abuse.ts). Each returns what it sent and a stop() that drops every connection it holds.
 */

function connectTo(url: string, localAddress?: string): Socket {
  const { hostname, port } = new URL(url);
  const socket = tcpConnect({ port: Number(port), host: hostname, ...(localAddress === undefined ? {} : { localAddress }) });
  socket.on('error', () => undefined);
  // Reads the answers, so that the server's FIN is seen; a reader that stops is another attack.
  socket.resume();
  return socket;
}

export interface Attack {
  /** What was sent so far, in words. */
  describe(): string;
  stop(): void;
}

/** `connections` connections each sending `requests` GET /metrics at once, pipelined, then reading. */
export function pipelinedMetrics(metricsUrl: string, connections: number, requests: number): Attack {
  const request = Buffer.from('GET /metrics HTTP/1.1\r\nHost: flood\r\n\r\n'.repeat(requests));
  let received = 0;
  let closed = 0;
  const sockets = Array.from({ length: connections }, () => {
    const socket = connectTo(metricsUrl);
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.on('close', () => (closed += 1));
    socket.write(request);
    return socket;
  });
  return {
    describe: () => `${((connections * request.length) / 1e6).toFixed(1)} MB sent, ${(received / 1e6).toFixed(1)} MB answered, ${closed} of ${connections} connections closed by serve`,
    stop: () => sockets.forEach((socket) => socket.destroy()),
  };
}

/** `connections` connections dripping one header line every 200 ms, never ending the headers; each reconnects when cut off. */
export function slowLoris(metricsUrl: string, connections: number, localAddress?: string): Attack {
  let attacking = true;
  let opened = 0;
  const sockets = new Set<Socket>();
  const drip = (): void => {
    if (!attacking) return;
    const socket = connectTo(metricsUrl, localAddress);
    opened += 1;
    sockets.add(socket);
    socket.write('GET /metrics HTTP/1.1\r\nHost: loris\r\n');
    const timer = setInterval(() => socket.write('x-drip: 1\r\n'), 200);
    socket.on('close', () => {
      clearInterval(timer);
      sockets.delete(socket);
      setTimeout(drip, 20);
    });
  };
  for (let i = 0; i < connections; i++) drip();
  return {
    describe: () => `${connections} connections at once, ${opened} opened in all`,
    stop: () => {
      attacking = false;
      for (const socket of sockets) socket.destroy();
    },
  };
}

/**
 * `perSecond` new connections a second that never send a byte, each kept until serve closes it, from
 * `localAddress` (another loopback address than a prober's, as a stranger's pod is not the kubelet).
 * Opened in catch-up steps every 10 ms, so a busy timer still reaches the rate.
 */
export function silentConnections(url: string, perSecond: number, localAddress?: string): Attack {
  const { hostname, port } = new URL(url);
  const sockets = new Set<Socket>();
  const startedMs = performance.now();
  let opened = 0;
  let closedByServe = 0;
  let attacking = true;
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - startedMs) / 1000) * perSecond);
    for (; opened < due && sockets.size < 4_000; opened++) {
      const socket = tcpConnect({ port: Number(port), host: hostname, ...(localAddress === undefined ? {} : { localAddress }) });
      socket.on('error', () => undefined);
      socket.resume();
      sockets.add(socket);
      socket.on('close', () => {
        sockets.delete(socket);
        if (attacking) closedByServe += 1;
      });
    }
  }, 10);
  return {
    describe: () => `${opened} silent connections opened (${perSecond}/s), ${closedByServe} closed by serve`,
    stop: () => {
      attacking = false;
      clearInterval(timer);
      for (const socket of sockets) socket.destroy();
    },
  };
}

/**
 * silentConnections on a thread of its own: opening hundreds of connections a second takes an event
 * loop, and a prober or a check caller on the same one would count the attacker's delays as serve's.
 */
export function silentConnectionsOnThread(url: string, perSecond: number, localAddress?: string): Attack {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.module).then(({ silentConnections }) => {
      const attack = silentConnections(workerData.url, workerData.perSecond, workerData.localAddress);
      const report = setInterval(() => parentPort.postMessage(attack.describe()), 250);
      parentPort.on('message', () => {
        clearInterval(report);
        attack.stop();
        parentPort.postMessage(attack.describe());
        parentPort.close();
      });
    });`,
    { eval: true, workerData: { module: import.meta.url, url, perSecond, localAddress } },
  );
  let described = 'no connection opened yet';
  worker.on('message', (text: string) => (described = text));
  worker.on('error', (error) => (described = `the attack failed: ${error.message}`));
  return {
    describe: () => described,
    stop: () => worker.postMessage('stop'),
  };
}

/** GET on a connection of its own, as a person's browser opens one; the status, or the error's code. */
export function getOnNewConnection(url: string, headers: IncomingHttpHeaders, timeoutMs = 10_000): Promise<number | string> {
  return new Promise((resolveStatus) => {
    const request = get(url, { agent: false, headers, timeout: timeoutMs }, (response) => {
      response.resume();
      response.on('end', () => resolveStatus(response.statusCode ?? 0));
      response.on('error', (error: NodeJS.ErrnoException) => resolveStatus(error.code ?? error.message));
    });
    request.on('timeout', () => request.destroy(Object.assign(new Error('time-out'), { code: 'time-out' })));
    request.on('error', (error: NodeJS.ErrnoException) => resolveStatus(error.code ?? error.message));
  });
}

const base64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * `perSecond` requests a second from `localAddress`, each with a token never sent before, alternating
 * made-up words (`x1`, `x2`, …) and tokens shaped like the admin provider's (its kid, iss, aud, a
 * future exp) under a signature that is not one.
 */
export function newTokenFlood(url: string, issuer: { readonly issuer: string; readonly audience: string }, perSecond: number, localAddress: string): Attack {
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const startedMs = performance.now();
  const answers = new Map<number, number>();
  let sent = 0;
  const forged = (n: number): string => {
    const now = Math.floor(Date.now() / 1000);
    const header = base64url({ alg: 'RS256', typ: 'at+jwt', kid: ADMIN_ISSUER_KID });
    const payload = base64url({ iss: issuer.issuer, aud: issuer.audience, sub: `mallory-${n}`, iat: now, exp: now + 300 });
    return `${header}.${payload}.${Buffer.alloc(256, n % 251).toString('base64url')}`;
  };
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - startedMs) / 1000) * perSecond);
    for (; sent < due; sent++) {
      const token = sent % 2 === 0 ? `x${sent}` : forged(sent);
      const request = get(url, { agent, localAddress, headers: { authorization: `Bearer ${token}` } }, (response) => {
        answers.set(response.statusCode ?? 0, (answers.get(response.statusCode ?? 0) ?? 0) + 1);
        response.resume();
      });
      request.on('error', () => undefined);
    }
  }, 10);
  return {
    describe: () => `${sent} new tokens sent; answered ${JSON.stringify(Object.fromEntries(answers))}`,
    stop: () => {
      clearInterval(timer);
      agent.destroy();
    },
  };
}
