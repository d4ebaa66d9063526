import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decide } from '../../src/decision/decide.js';
import type { Decision } from '../../src/decision/types.js';
import { startGrpcServer, type AuthzGrpcServer } from '../../src/envoy/grpc-server.js';
import { createLogger } from '../../src/observe/logger.js';
import { freePort } from '../../src/embedded/embedded-postgres.js';
import { runCli } from '../support/service.js';
import { NO_SUNSET, snapshotOf } from '../support/snapshot.js';

const KEY = '0f0e0d0c-0b0a-4908-8706-050403020100';
const SNAPSHOT = snapshotOf([{ siteId: '1001', keys: [{ key: KEY, keyId: '5' }], cidrs: ['203.0.113.0/24'] }]);
// `check` needs no database: a URL that leads nowhere proves it never opens one.
const NO_DATABASE = 'postgres://nobody@127.0.0.1:1/none';

/** `sitekey-authz check` against a real gRPC server deciding on an in-memory snapshot. */
describe('sitekey-authz check, against a real server', () => {
  let server: AuthzGrpcServer;
  let target: string;
  let dataLoaded = true;

  before(async () => {
    server = await startGrpcServer({
      bindAddress: '127.0.0.1',
      port: 0,
      maxBodyBytes: 1_048_576,
      maxConnections: 1_024,
      logger: createLogger('silent'),
      authorization: {
        clientIpSource: { kind: 'peer' },
        maxBodyBytes: 1_048_576,
        authorize: (input): Decision | undefined => (dataLoaded ? decide(input, SNAPSHOT, Date.now(), NO_SUNSET) : undefined),
        logger: createLogger('silent'),
      },
    });
    target = `127.0.0.1:${server.port}`;
  });

  after(async () => {
    await server?.shutdown(1_000);
  });

  const check = (...args: string[]) => runCli(NO_DATABASE, ['check', '--target', target, ...args]);

  it('prints ALLOW with x-site-id and metadata, and exits 0, with the body made up from --authorization', async () => {
    const run = await check('--authorization', `1001:${KEY}`, '--ip', '203.0.113.7');
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^ALLOW/);
    assert.match(run.stdout, /x-site-id: 1001 {2}\[OVERWRITE_IF_EXISTS_OR_ADD\]/);
    assert.match(run.stdout, /key_id = 5/);
    assert.match(run.stderr, /no --body given: the body is made up from --authorization, \{"siteid":1001,"apikey":"\*{5}20100"\}/);
    assert.ok(!run.stderr.includes(KEY) && !run.stdout.includes(KEY), 'the key is never printed');
  });

  it('allows the same request sent with raw headers and a raw body, as Envoy can send it', async () => {
    const run = await check('--authorization', `1001:${KEY}`, '--ip', '203.0.113.7', '--raw-headers', '--raw-body');
    assert.equal(run.code, 0, run.stderr);
  });

  it('prints DENY with the HTTP status and JSON body, and exits 1', async () => {
    const run = await check('--authorization', `1001:${KEY}`, '--ip', '198.51.100.9');
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stdout, /^DENY {2}HTTP 403 {2}\(gRPC status 7 PERMISSION_DENIED, IP_NOT_WHITELISTED\)/);
    assert.match(run.stdout, /\{"error":\{"id":103,"message":"IP address 198\.51\.100\.9 is not whitelisted for site ID 1001"\}\}/);
  });

  it('prints one JSON object with --json, for an allow and a denial', async () => {
    const allowed = await check('--authorization', `1001:${KEY}`, '--ip', '203.0.113.7', '--json');
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.deepEqual(JSON.parse(allowed.stdout), { allowed: true, grpcCode: 0, httpStatus: null, error: null, siteId: '1001', keyId: '5', authMethod: 'api_key', clientId: null, rule: null });
    const denied = await check('--authorization', `1001:${KEY}`, '--ip', '203.0.113.7', '--no-body', '--json');
    assert.equal(denied.code, 1, denied.stderr);
    assert.deepEqual(JSON.parse(denied.stdout), {
      allowed: false,
      grpcCode: 16,
      httpStatus: 401,
      error: { id: 104, message: 'Request body is missing: it must be a JSON object carrying siteid and apikey' },
      siteId: null,
      keyId: null,
      authMethod: null,
      clientId: null,
      rule: null,
    });
  });

  it('passes --context to the route settings: body_credentials=optional admits no body', async () => {
    const run = await check('--authorization', `1001:${KEY}`, '--ip', '203.0.113.7', '--no-body', '--context', 'body_credentials=optional');
    assert.equal(run.code, 0, run.stdout);
  });

  it('exits 2 and names the gRPC status when the service cannot decide', async () => {
    dataLoaded = false;
    const run = await check('--authorization', `1001:${KEY}`);
    const json = await check('--authorization', `1001:${KEY}`, '--json');
    dataLoaded = true;
    assert.equal(run.code, 2);
    assert.match(run.stdout, /^NO VERDICT {2}\(gRPC status 14 UNAVAILABLE: no credential data loaded/);
    assert.equal(json.code, 2);
    assert.deepEqual(JSON.parse(json.stdout), { allowed: false, grpcCode: 14, httpStatus: null, error: null, siteId: null, keyId: null, authMethod: null, clientId: null, rule: null });
  });

  it('exits 2 when nothing listens at --target', async () => {
    const port = await freePort();
    const run = await runCli(NO_DATABASE, ['check', '--target', `127.0.0.1:${port}`, '--authorization', `1001:${KEY}`, '--json']);
    assert.equal(run.code, 2, run.stderr);
    assert.equal((JSON.parse(run.stdout) as { grpcCode: number }).grpcCode, 14);
  });

  it('exits 2 and says what to type instead on a bad argument, as every command does', async () => {
    const cases: ReadonlyArray<readonly [readonly string[], RegExp]> = [
      [['--header', 'no-separator'], /^sitekey-authz: --header "no-separator" is not NAME=VALUE or NAME:VALUE; try --header x-request-id=abc\n$/],
      [['--timeout-ms', '5s'], /^sitekey-authz: --timeout-ms "5s" is not a whole number/],
      [['--body', '{}', '--no-body'], /--body and --no-body exclude each other/],
      [['--target', '', '--no-body'], /^sitekey-authz: --target "" is not a gRPC target/],
      [['--color'], /"check" has no option --color/],
      [['extra'], /"check" does not take "extra"/],
    ];
    for (const [args, message] of cases) {
      const run = await check(...args);
      assert.equal(run.code, 2, args.join(' '));
      assert.match(run.stderr, message, args.join(' '));
    }
    const json = await check('--header', 'no-separator', '--json');
    assert.equal(json.code, 2);
    assert.equal((JSON.parse(json.stderr) as { error: { code: string } }).error.code, 'USAGE');
  });
});
