import * as grpc from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { loadConfig, type GrpcTlsFiles } from '../../src/config.js';
import { decide } from '../../src/decision/decide.js';
import { startGrpcServer, type AuthzGrpcServer } from '../../src/envoy/grpc-server.js';
import { createLogger } from '../../src/observe/logger.js';
import { certificateAuthority, type CertificateAuthority, type Issued } from '../support/certificates.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { eventually } from '../support/eventually.js';
import { healthClient, healthOf } from '../support/health-client.js';
import { NO_SUNSET, snapshotOf } from '../support/snapshot.js';

const DEFAULTS = loadConfig({});
const KEY = '6f1c1e0a-8a4b-4c52-9d3e-0b7a2c9d4e5f';
const NOW = Date.parse('2026-06-01T00:00:00Z');
const SNAPSHOT = snapshotOf([{ siteId: '1001', keys: [{ key: KEY, keyId: '11' }], cidrs: ['203.0.113.0/24'] }]);
const ALLOWED = { authorization: `1001:${KEY}`, body: JSON.stringify({ siteid: 1001, apikey: KEY }), ip: '203.0.113.7' };
const FILE_CHECK_MS = 100;

/**
 * A Secret volume as kubelet writes it: each version in a directory of its own, `..data` a link to the
 * current one, the files links through `..data`. A new version is swapped in by renaming a new link
 * over `..data`, which is how the files change under a running pod.
 */
class SecretVolume {
  private version = 0;
  constructor(readonly dir: string) {
    mkdirSync(dir);
  }

  write(files: Record<string, string>): void {
    const versionDir = `..version_${++this.version}`;
    mkdirSync(join(this.dir, versionDir));
    for (const [name, contents] of Object.entries(files)) writeFileSync(join(this.dir, versionDir, name), contents);
    symlinkSync(versionDir, join(this.dir, '..data_tmp'));
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    for (const name of Object.keys(files)) {
      try {
        symlinkSync(join('..data', name), join(this.dir, name));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
  }
}

function secretFiles(server: Issued, clientCa: string): Record<string, string> {
  return { 'tls.crt': server.cert, 'tls.key': server.key, 'ca.crt': clientCa };
}

/** The SHA-256 fingerprint of the certificate a new TLS connection to the port is shown. */
function servedFingerprint(port: number, client: Issued, ca: string): Promise<string> {
  return new Promise((resolveServed, reject) => {
    // The CA is not checked here: this asks what is served, whoever signed it.
    const socket = tlsConnect({ host: '127.0.0.1', port, ALPNProtocols: ['h2'], cert: client.cert, key: client.key, ca, rejectUnauthorized: false }, () => {
      const fingerprint = socket.getPeerX509Certificate()?.fingerprint256 ?? 'none';
      socket.destroy();
      resolveServed(fingerprint);
    });
    socket.once('error', reject);
  });
}

function fingerprintOf(issued: Issued): string {
  return new X509Certificate(issued.cert).fingerprint256;
}

function sslCredentials(ca: string, client?: Issued): grpc.ChannelCredentials {
  return client === undefined
    ? grpc.credentials.createSsl(Buffer.from(ca))
    : grpc.credentials.createSsl(Buffer.from(ca), Buffer.from(client.key), Buffer.from(client.cert));
}

async function refused(credentials: grpc.ChannelCredentials, port: number): Promise<void> {
  const client = authorizationClient(`localhost:${port}`, { 'grpc.use_local_subchannel_pool': 1 }, credentials);
  try {
    await assert.rejects(check(client, ALLOWED), (error: grpc.ServiceError) => {
      assert.equal(error.code, grpc.status.UNAVAILABLE, `gRPC ${grpc.status[error.code]}: ${error.details}`);
      return true;
    });
  } finally {
    client.close();
  }
}

describe('TLS on the Check port (GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE, GRPC_TLS_CLIENT_CA_FILE)', () => {
  let work: string;
  let serverCa: CertificateAuthority;
  let proxyCa: CertificateAuthority;
  let otherCa: CertificateAuthority;
  let serverCert: Issued;
  let proxyCert: Issued;
  let volume: SecretVolume;
  let files: GrpcTlsFiles;
  let server: AuthzGrpcServer;
  const logLines: string[] = [];

  const start = (tls: GrpcTlsFiles) =>
    startGrpcServer({
      bindAddress: '127.0.0.1',
      port: 0,
      maxBodyBytes: DEFAULTS.maxBodyBytes,
      maxConnections: DEFAULTS.grpcMaxConnections,
      logger: createLogger(
        'info',
        new Writable({
          write(chunk: Buffer, _encoding, done) {
            logLines.push(...chunk.toString().split('\n').filter(Boolean));
            done();
          },
        }),
      ),
      limits: { tlsFileCheckMs: FILE_CHECK_MS },
      tls,
      authorization: {
        clientIpSource: { kind: 'peer' },
        maxBodyBytes: DEFAULTS.maxBodyBytes,
        authorize: (input) => decide(input, SNAPSHOT, NOW, NO_SUNSET),
        logger: createLogger('silent'),
      },
    });

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'sitekey-authz-tls-'));
    [serverCa, proxyCa, otherCa] = await Promise.all([certificateAuthority('server CA'), certificateAuthority('proxy CA'), certificateAuthority('other CA')]);
    serverCert = await serverCa.issue('sitekey-authz', 'server');
    proxyCert = await proxyCa.issue('envoy', 'client');
    volume = new SecretVolume(join(work, 'tls'));
    volume.write(secretFiles(serverCert, proxyCa.cert));
    files = { certFile: join(volume.dir, 'tls.crt'), keyFile: join(volume.dir, 'tls.key'), clientCaFile: join(volume.dir, 'ca.crt') };
    server = await start(files);
    server.setServing(true);
  });

  after(async () => {
    await server?.shutdown(1_000);
    rmSync(work, { recursive: true, force: true });
  });

  it('refuses a plaintext client', async () => {
    await refused(grpc.credentials.createInsecure(), server.port);
  });

  it('refuses a TLS client without a client certificate', async () => {
    await refused(sslCredentials(serverCa.cert), server.port);
  });

  it('refuses a client certificate from another CA', async () => {
    await refused(sslCredentials(serverCa.cert, await otherCa.issue('intruder', 'client')), server.port);
  });

  it("answers the proxy's certificate, Check and health alike", async () => {
    const credentials = sslCredentials(serverCa.cert, proxyCert);
    const client = authorizationClient(`localhost:${server.port}`, { 'grpc.use_local_subchannel_pool': 1 }, credentials);
    const health = healthClient(`localhost:${server.port}`, credentials);
    try {
      assert.equal(verdict(await check(client, ALLOWED)), 'allow');
      assert.equal(verdict(await check(client, { ...ALLOWED, ip: '198.51.100.9' })), 103);
      assert.equal(await healthOf(health, ''), 'SERVING');
      assert.equal(await healthOf(health, 'envoy.service.auth.v3.Authorization'), 'SERVING');
    } finally {
      client.close();
      health.close();
    }
  });

  it('refuses to start on a missing or mismatched file, naming it on one line', async () => {
    const missing = join(work, 'absent.crt');
    await assert.rejects(start({ ...files, certFile: missing }), (error: Error) => {
      assert.equal(error.message, `GRPC_TLS_CERT_FILE (${missing}) cannot be read (ENOENT)`);
      return true;
    });
    const otherKey = join(work, 'other.key');
    writeFileSync(otherKey, (await serverCa.issue('other', 'server')).key);
    await assert.rejects(start({ ...files, keyFile: otherKey }), (error: Error) => {
      assert.match(error.message, /^GRPC_TLS_KEY_FILE \(.*other\.key\) is not the key of the certificate in GRPC_TLS_CERT_FILE \(.*tls\.crt\)$/);
      return true;
    });
    const notPem = join(work, 'ca.txt');
    writeFileSync(notPem, 'not a certificate\n');
    await assert.rejects(start({ ...files, clientCaFile: notPem }), (error: Error) => {
      assert.match(error.message, /^GRPC_TLS_CLIENT_CA_FILE \(.*ca\.txt\) holds no PEM certificate \([^\n]*\)$/);
      return true;
    });
  });

  it('serves a certificate swapped in by a symlink to new connections, without a restart and without dropping open ones; a bad one is logged and not served', async () => {
    // A connection opened before the rotation, by a client that trusts only the old server CA.
    const before = authorizationClient(`localhost:${server.port}`, { 'grpc.use_local_subchannel_pool': 1 }, sslCredentials(serverCa.cert, proxyCert));
    try {
      assert.equal(verdict(await check(before, ALLOWED)), 'allow');
      assert.equal(await servedFingerprint(server.port, proxyCert, serverCa.cert), fingerprintOf(serverCert));

      const renewedCa = await certificateAuthority('renewed server CA');
      const renewed = await renewedCa.issue('sitekey-authz', 'server');
      volume.write(secretFiles(renewed, proxyCa.cert));
      await eventually('the renewed certificate served', () => servedFingerprint(server.port, proxyCert, serverCa.cert), (served) => served === fingerprintOf(renewed), 30_000);

      // New connections trust the renewed CA; the open connection (whose client would refuse the
      // renewed certificate on a reconnect) keeps answering.
      const after = authorizationClient(`localhost:${server.port}`, { 'grpc.use_local_subchannel_pool': 1 }, sslCredentials(renewedCa.cert, proxyCert));
      try {
        assert.equal(verdict(await check(after, ALLOWED)), 'allow');
      } finally {
        after.close();
      }
      assert.equal(verdict(await check(before, ALLOWED)), 'allow', 'the connection opened before the rotation still answers');

      // A key that is not the certificate's: logged, and the renewed certificate stays in use.
      const stray = await renewedCa.issue('sitekey-authz', 'server');
      volume.write({ ...secretFiles(renewed, proxyCa.cert), 'tls.key': stray.key });
      await eventually(
        'the bad rotation logged',
        async () => logLines.filter((line) => line.includes('cannot be used; the certificate in use is kept')),
        (lines) => lines.length > 0,
        30_000,
      );
      assert.equal(await servedFingerprint(server.port, proxyCert, serverCa.cert), fingerprintOf(renewed));
    } finally {
      before.close();
    }
  });
});
