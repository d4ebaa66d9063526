import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { freePorts } from '../../src/embedded/processes.js';

/** Linux's default range for the local ports of outgoing connections (/proc/sys/net/ipv4/ip_local_port_range). */
const EPHEMERAL_FROM = 32_768;

function listenOn(port: number): Promise<() => Promise<void>> {
  return new Promise((listening, failed) => {
    const server = createServer();
    server.once('error', failed);
    server.listen(port, '127.0.0.1', () => listening(() => new Promise((closed) => server.close(() => closed()))));
  });
}

describe('freePorts', () => {
  it('hands out different ports below the range outgoing connections take theirs from, each free to listen on', async () => {
    const ports = await freePorts(5);
    assert.equal(new Set(ports).size, 5, `${ports.join(', ')}`);
    for (const port of ports) assert.ok(port >= 1_024 && port < EPHEMERAL_FROM, `port ${port} is in the ephemeral range, where a client socket can take it first`);
    const closers = await Promise.all(ports.map(listenOn));
    await Promise.all(closers.map((close) => close()));
  });
});
