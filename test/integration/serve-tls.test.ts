import * as grpc from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { certificateAuthority, type Issued } from '../support/certificates.js';
import { seedSite } from '../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { runCli, startService } from '../support/service.js';

const KEY = '6f1c1e0a-8a4b-4c52-9d3e-0b7a2c9d4e5f';
const ALLOWED = { authorization: `1001:${KEY}`, body: JSON.stringify({ siteid: 1001, apikey: KEY }), ip: '127.0.0.1' };

/** `serve` with GRPC_TLS_* from the environment: the settings reach the port, in every worker. */
describe('serve with GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE and GRPC_TLS_CLIENT_CA_FILE', () => {
  let work: string;
  let database: TestDatabase;
  let env: Record<string, string>;
  let serverCa: string;
  let proxy: Issued;

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'sitekey-authz-serve-tls-'));
    const [server, proxies] = await Promise.all([certificateAuthority('server CA'), certificateAuthority('proxy CA')]);
    const served = await server.issue('sitekey-authz', 'server');
    proxy = await proxies.issue('envoy', 'client');
    serverCa = server.cert;
    writeFileSync(join(work, 'tls.crt'), served.cert);
    writeFileSync(join(work, 'tls.key'), served.key);
    writeFileSync(join(work, 'ca.crt'), proxies.cert);
    database = await freshDatabase();
    await seedSite(database.url, { id: '1001', keys: [{ key: KEY }], cidrs: ['127.0.0.1/32'] });
    env = {
      DATABASE_URL: database.url,
      GRPC_TLS_CERT_FILE: join(work, 'tls.crt'),
      GRPC_TLS_KEY_FILE: join(work, 'tls.key'),
      GRPC_TLS_CLIENT_CA_FILE: join(work, 'ca.crt'),
    };
  });

  after(async () => {
    await database?.drop();
    rmSync(work, { recursive: true, force: true });
  });

  for (const workers of ['1', '2']) {
    it(`answers a proxy's certificate and refuses plaintext (WORKERS=${workers})`, async () => {
      const service = await startService({ ...env, WORKERS: workers });
      const withCertificate = authorizationClient(service.grpcTarget.replace('127.0.0.1', 'localhost'), { 'grpc.use_local_subchannel_pool': 1 },
        grpc.credentials.createSsl(Buffer.from(serverCa), Buffer.from(proxy.key), Buffer.from(proxy.cert)));
      const plaintext = authorizationClient(service.grpcTarget, { 'grpc.use_local_subchannel_pool': 1 });
      try {
        assert.equal(verdict(await check(withCertificate, ALLOWED)), 'allow');
        await assert.rejects(check(plaintext, ALLOWED), (error: grpc.ServiceError) => error.code === grpc.status.UNAVAILABLE);
        assert.match(service.output(), /"msg":"gRPC port serves TLS"/);
      } finally {
        withCertificate.close();
        plaintext.close();
        assert.equal(await service.stop(), 0, service.output());
      }
    });
  }

  it('stops at start with one line naming a missing file', async () => {
    const missing = join(work, 'absent.key');
    const { code, stderr } = await runCli(database.url, ['serve'], undefined, { ...env, GRPC_TLS_KEY_FILE: missing, GRPC_PORT: '0', METRICS_PORT: '0', BIND_ADDRESS: '127.0.0.1' });
    assert.notEqual(code, 0);
    assert.equal(stderr.trim(), `sitekey-authz: GRPC_TLS_KEY_FILE (${missing}) cannot be read (ENOENT)`);
  });
});
