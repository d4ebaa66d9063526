import assert from 'node:assert/strict';
import { get } from 'node:http';
import { connect as tcpConnect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const OPEN_FILE_LIMIT = 256;
const IDLE_CONNECTIONS = 300;

/** GET on a new connection, as kubelet probes (fetch would reuse the connection it polled readiness on). */
function probe(url: string): Promise<number | undefined> {
  return new Promise((resolveStatus, reject) => {
    const request = get(url, { agent: false, timeout: 5_000 }, (response) => {
      response.resume();
      resolveStatus(response.statusCode);
    });
    request.on('timeout', () => request.destroy(new Error(`no answer from ${url} within 5 s`)));
    request.on('error', reject);
  });
}

/**
 * With a 256 descriptor limit, 300 idle TCP connections to the gRPC port made /readyz
 * unreachable (every descriptor was taken, so the HTTP port could accept nothing). The real `serve`,
 * its open-file limit lowered with prlimit, must keep answering probes and checks.
 */
describe(`serve with ${OPEN_FILE_LIMIT} file descriptors and ${IDLE_CONNECTIONS} idle connections on the gRPC port`, () => {
  let database: TestDatabase;
  let service: RunningService;
  let key: string;
  const sockets: Socket[] = [];

  before(async () => {
    database = await freshDatabase();
    for (const args of [['site', 'add', '1001'], ['ip', 'allow', '1001', '127.0.0.1']]) assert.equal((await runCli(database.url, args)).code, 0);
    key = (JSON.parse((await runCli(database.url, ['key', 'issue', '1001', '--json'])).stdout) as { apiKey: string }).apiKey;
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false' }, { openFileLimit: OPEN_FILE_LIMIT });
  });

  after(async () => {
    for (const socket of sockets) socket.destroy();
    await service?.stop();
    await database?.drop();
  });

  it("keeps /readyz and Envoy's established connection answering, closing the connections it cannot hold", async () => {
    // Envoy's long-lived connection, opened before the flood.
    const client = authorizationClient(service.grpcTarget);
    const body = JSON.stringify({ siteid: 1001, apikey: key });
    const allowed = async () => verdict(await check(client, { authorization: `1001:${key}`, body, ip: '127.0.0.1' }));
    try {
      assert.equal(await allowed(), 'allow');
      const [host = '', port = ''] = service.grpcTarget.split(':');
      let closedByServer = 0;
      await Promise.all(
        Array.from(
          { length: IDLE_CONNECTIONS },
          () =>
            new Promise<void>((resolveConnect) => {
              const socket = tcpConnect(Number(port), host, () => resolveConnect());
              socket.on('error', () => resolveConnect());
              socket.on('close', () => (closedByServer += 1));
              socket.resume();
              sockets.push(socket);
            }),
        ),
      );
      await sleep(200);
      assert.equal(await probe(`${service.httpBase}/readyz`), 200);
      assert.equal(await allowed(), 'allow');
      assert.ok(closedByServer > 0, 'no connection was refused, although they cannot all have a descriptor');
      assert.match(service.output(), /GRPC_MAX_CONNECTIONS lowered/);
    } finally {
      client.close();
    }
  });
});
