import { execFile } from 'node:child_process';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.js';
import { decide } from '../../src/decision/decide.js';
import type { Decision } from '../../src/decision/types.js';
import { startGrpcServer, type AuthzGrpcServer } from '../../src/envoy/grpc-server.js';
import { createLogger } from '../../src/observe/logger.js';
import { snapshotOf } from '../support/snapshot.js';

/** The production defaults of MAX_BODY_BYTES and GRPC_MAX_CONNECTIONS. */
const DEFAULTS = loadConfig({});
const SEND_CHECK = fileURLToPath(new URL('../../src/client/send-check.js', import.meta.url));
const KEY = '0f0e0d0c-0b0a-4908-8706-050403020100';
const SNAPSHOT = snapshotOf([{ siteId: '1001', keys: [{ key: KEY, keyId: '5' }], cidrs: ['203.0.113.0/24'] }]);

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function sendCheck(args: readonly string[]): Promise<Run> {
  return new Promise((resolveRun) => {
    execFile(process.execPath, [SEND_CHECK, ...args], { timeout: 15_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolveRun({ code, stdout, stderr });
    });
  });
}

describe('send-check, the client script, against a real server', () => {
  let server: AuthzGrpcServer;
  let target: string;
  let dataLoaded = true;

  before(async () => {
    server = await startGrpcServer({
      bindAddress: '127.0.0.1',
      port: 0,
      maxBodyBytes: DEFAULTS.maxBodyBytes,
      maxConnections: DEFAULTS.grpcMaxConnections,
      logger: createLogger('silent'),
      authorization: {
        clientIpSource: { kind: 'peer' },
        authorize: (input): Decision | undefined => (dataLoaded ? decide(input, SNAPSHOT, Date.now()) : undefined),
        logger: createLogger('silent'),
      },
    });
    target = `127.0.0.1:${server.port}`;
  });

  after(async () => {
    await server?.shutdown(1_000);
  });

  it('prints ALLOW with x-site-id and metadata, and exits 0, with the body built from --authorization', async () => {
    const run = await sendCheck(['--target', target, '--authorization', `1001:${KEY}`, '--ip', '203.0.113.7']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^ALLOW/);
    assert.match(run.stdout, /x-site-id: 1001 {2}\[OVERWRITE_IF_EXISTS_OR_ADD\]/);
    assert.match(run.stdout, /key_id = 5/);
  });

  it('allows the same request sent with raw headers and a raw body, as Envoy can send it', async () => {
    const run = await sendCheck(['--target', target, '--authorization', `1001:${KEY}`, '--ip', '203.0.113.7', '--raw-headers', '--raw-body']);
    assert.equal(run.code, 0, run.stderr);
  });

  it('prints DENY with the HTTP status and JSON body, and exits 1', async () => {
    const run = await sendCheck(['--target', target, '--authorization', `1001:${KEY}`, '--ip', '198.51.100.9']);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stdout, /^DENY {2}HTTP 403 {2}\(gRPC status 7 PERMISSION_DENIED, IP_NOT_WHITELISTED\)/);
    assert.match(run.stdout, /\{"error":\{"id":103,"message":"IP address 198\.51\.100\.9 is not whitelisted for site ID 1001"\}\}/);
  });

  it('denies a request without a body when --no-body is given (104)', async () => {
    const run = await sendCheck(['--target', target, '--authorization', `1001:${KEY}`, '--ip', '203.0.113.7', '--no-body']);
    assert.equal(run.code, 1);
    assert.match(run.stdout, /"id":104/);
  });

  it('passes --context to the route settings: body_credentials=optional admits no body', async () => {
    const run = await sendCheck(['--target', target, '--authorization', `1001:${KEY}`, '--ip', '203.0.113.7', '--no-body', '--context', 'body_credentials=optional']);
    assert.equal(run.code, 0, run.stdout);
  });

  it('exits 2 and names the gRPC status when the service cannot decide', async () => {
    dataLoaded = false;
    const run = await sendCheck(['--target', target, '--authorization', `1001:${KEY}`]);
    dataLoaded = true;
    assert.equal(run.code, 2);
    assert.match(run.stderr, /gRPC UNAVAILABLE/);
  });

  it('exits 2 and says what to type instead on a bad argument', async () => {
    const run = await sendCheck(['--header', 'no-equals-sign']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /try --header x-request-id=abc/);
    assert.match(run.stderr, /Usage:/);
  });
});
