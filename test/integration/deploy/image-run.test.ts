import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { freePorts } from '../../../src/embedded/embedded-postgres.js';
import { seedSite } from '../../support/credentials.js';
import { skipWithoutTool } from '../../support/required-tool.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { authorizationClient, check, verdict } from '../../support/envoy-client.js';
import { eventually } from '../../support/eventually.js';

/**
 * The image, built from the Dockerfile unchanged and run for real with podman: read-only, as the
 * image's own non-root user, against the test PostgreSQL on loopback. Building takes minutes, so it
 * runs when IMAGE_TEST=1 (.ci/run sets it for its first `make test` only); where podman cannot run
 * it says skipped, and why.
 */
const execFileAsync = promisify(execFile);
const execute = (command: string, args: readonly string[], timeoutMs: number) =>
  execFileAsync(command, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' });

/** runc: crun, podman's default on Debian, fails on the hybrid cgroup layout of the CI machines. */
const PODMAN_FLAGS = ['--runtime', 'runc'];
/** Within the sandbox's hard limits (podman's defaults ask for more and runc may not raise them). */
const ULIMITS = ['--ulimit', 'nofile=16384:16384', '--ulimit', 'nproc=16384:16384'];
/** The Dockerfile's FROM image, which cannot be pulled here: a stand-in of the same name is built. */
const BASE_IMAGE = 'docker.io/library/node:26-bookworm-slim';
const IMAGE = `localhost/sitekey-authz:image-test-${randomBytes(3).toString('hex')}`;
const CACHE_DIR = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sitekey-authz', 'image-test');
const PACKAGE = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string; description: string };

function whyNot(): string | false {
  if (process.env.IMAGE_TEST !== '1') return 'the image is built and run only with IMAGE_TEST=1 (.ci/run sets it for its first make test; it takes minutes)';
  return skipWithoutTool('podman', podmanMissing());
}

function podmanMissing(): string | false {
  const info = spawnSync('podman', [...PODMAN_FLAGS, 'info'], { encoding: 'utf8' });
  if (info.error !== undefined) return 'podman is not installed (apt-get install podman runc; .ci/run installs it)';
  if (info.status !== 0) return `podman cannot run here: ${info.stderr.trim().split('\n').at(-1)}`;
  const base = spawnSync('podman', [...PODMAN_FLAGS, 'image', 'exists', BASE_IMAGE]);
  if (base.status !== 0 && spawnSync('debootstrap', ['--version']).error !== undefined) return 'no stand-in base image and no debootstrap to build one (apt-get install debootstrap)';
  if (base.status !== 0 && process.getuid?.() !== 0) return 'no stand-in base image, and building one (debootstrap, chroot) needs root';
  return false;
}
const SKIP = whyNot();

function podman(args: readonly string[], timeoutMs = 60_000) {
  return execute('podman', [...PODMAN_FLAGS, ...args], timeoutMs);
}

/** `podman run --rm` of the image with `args`, read-only, host network; the exit code and all output. */
function runOnce(args: readonly string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const envArgs = Object.entries(env).flatMap(([name, value]) => ['--env', `${name}=${value}`]);
  const child = spawn('podman', [...PODMAN_FLAGS, 'run', '--rm', '--read-only', '--network', 'host', ...ULIMITS, ...envArgs, IMAGE, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolveRun) => child.on('close', (code) => resolveRun({ code, output })));
}

describe('the image, built with podman and run', { skip: SKIP, timeout: 30 * 60_000 }, () => {
  let database: TestDatabase;

  before(async () => {
    await execute(join(PACKAGE_ROOT, 'test', 'deploy', 'image', 'stand-in-base-image.sh'), [BASE_IMAGE, CACHE_DIR], 15 * 60_000);
    const revision = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: PACKAGE_ROOT, encoding: 'utf8' }).stdout.trim() || 'unknown';
    // The host network: `npm ci` in the build reaches the registry as the host does.
    await podman(['build', '--network', 'host', ...ULIMITS, '--build-arg', `VERSION=${PACKAGE.version}`, '--build-arg', `REVISION=${revision}`, '--tag', IMAGE, PACKAGE_ROOT], 20 * 60_000);
    database = await freshDatabase({ migrated: false });
  });

  after(async () => {
    await database?.drop();
    await podman(['rmi', '--force', IMAGE]).catch(() => undefined);
  });

  it('carries the OCI labels and runs as a non-root user given by number', async () => {
    const { stdout } = await podman(['image', 'inspect', IMAGE, '--format', '{{json .Config}}']);
    const config = JSON.parse(stdout) as { Labels: Record<string, string>; User: string };
    assert.equal(config.Labels['org.opencontainers.image.title'], 'sitekey-authz');
    assert.equal(config.Labels['org.opencontainers.image.version'], PACKAGE.version);
    assert.equal(config.Labels['org.opencontainers.image.description'], PACKAGE.description);
    assert.match(config.Labels['org.opencontainers.image.revision'] ?? '', /^([0-9a-f]{40}|unknown)$/);
    assert.equal(config.Labels['org.opencontainers.image.base.name'], 'node:26-bookworm-slim');
    assert.equal(config.User, '1000:1000');
  });

  it('ships a CycloneDX SBOM that lists exactly the packages in its node_modules', async () => {
    const { stdout } = await podman(['run', '--rm', ...ULIMITS, '--entrypoint', 'cat', IMAGE, '/app/sbom.cdx.json']);
    const sbom = JSON.parse(stdout) as { bomFormat: string; metadata: { component: { purl: string } }; components: Array<{ name: string; version: string }> };
    assert.equal(sbom.bomFormat, 'CycloneDX');
    assert.equal(sbom.metadata.component.purl, `pkg:npm/sitekey-authz@${PACKAGE.version}`);
    const listed = new Set(sbom.components.map((component) => `${component.name}@${component.version}`));
    // Every package.json under /app/node_modules, read inside the image by its own node.
    const walk = `const fs=require('fs'),path=require('path'),found=new Set();
      const visit=(dir)=>{for(const entry of fs.readdirSync(dir,{withFileTypes:true})){if(!entry.isDirectory())continue;
        const at=path.join(dir,entry.name);if(entry.name.startsWith('@')){visit(at);continue}
        try{const p=JSON.parse(fs.readFileSync(path.join(at,'package.json'),'utf8'));found.add(p.name+'@'+p.version)}catch{}
        if(fs.existsSync(path.join(at,'node_modules')))visit(path.join(at,'node_modules'))}};
      visit('/app/node_modules');console.log(JSON.stringify([...found]))`;
    const shipped = new Set(JSON.parse((await podman(['run', '--rm', ...ULIMITS, '--entrypoint', 'node', IMAGE, '-e', walk])).stdout) as string[]);
    assert.deepEqual([...shipped].filter((entry) => !listed.has(entry)).sort(), [], 'shipped but not in the SBOM');
    assert.deepEqual([...listed].filter((entry) => !shipped.has(entry)).sort(), [], 'in the SBOM but not shipped');
    assert.ok(listed.has(`@grpc/grpc-js@${JSON.parse(readFileSync(join(PACKAGE_ROOT, 'node_modules', '@grpc', 'grpc-js', 'package.json'), 'utf8')).version}`));
  });

  it('says to set DATABASE_URL when it is unset, on a read-only root filesystem', async () => {
    const { code, output } = await runOnce(['serve'], {});
    assert.notEqual(code, 0);
    assert.match(output, /DATABASE_URL is unset, and this installation has no embedded PostgreSQL/);
    assert.doesNotMatch(output, /cannot create DATA_DIR/);
  });

  it('migrates, serves an allowed and a denied Check, and drains and exits 0 on SIGTERM', async () => {
    const migrate = await runOnce(['migrate'], { DATABASE_URL: database.url });
    assert.equal(migrate.code, 0, migrate.output);
    const key = '6f1c1e0a-8a4b-4c52-9d3e-0b7a2c9d4e5f';
    await seedSite(database.url, { id: '1001', keys: [{ key }], cidrs: ['203.0.113.0/24'] });

    const [grpcPort, metricsPort] = await freePorts(2);
    const name = `sitekey-authz-image-test-${randomBytes(3).toString('hex')}`;
    const env = { DATABASE_URL: database.url, BIND_ADDRESS: '127.0.0.1', GRPC_PORT: String(grpcPort), METRICS_PORT: String(metricsPort), SHUTDOWN_GRACE_SECONDS: '5' };
    const envArgs = Object.entries(env).flatMap(([variable, value]) => ['--env', `${variable}=${value}`]);
    const serve: ChildProcess = spawn('podman', [...PODMAN_FLAGS, 'run', '--rm', '--name', name, '--read-only', '--network', 'host', ...ULIMITS, ...envArgs, IMAGE], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    serve.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    serve.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolveExit) => serve.on('close', (code) => resolveExit(code)));
    const client = authorizationClient(`127.0.0.1:${grpcPort}`);
    try {
      await eventually(
        'the container ready',
        () => fetch(`http://127.0.0.1:${metricsPort}/readyz`).then((response) => response.status, () => 0),
        (status) => status === 200 || serve.exitCode !== null,
        120_000,
      );
      assert.equal(serve.exitCode, null, output);
      const body = JSON.stringify({ siteid: 1001, apikey: key });
      assert.equal(verdict(await check(client, { authorization: `1001:${key}`, body, ip: '203.0.113.7' })), 'allow');
      assert.equal(verdict(await check(client, { authorization: `1001:${key}`, body, ip: '198.51.100.9' })), 103);
    } finally {
      client.close();
      await podman(['kill', '--signal', 'TERM', name]).catch(() => undefined);
    }
    const code = await Promise.race([exited, sleep(60_000, 'hung' as const, { ref: false })]);
    if (code === 'hung') await podman(['rm', '--force', name]).catch(() => undefined);
    assert.equal(code, 0, `exit code after SIGTERM:\n${output}`);
    assert.match(output, /"msg":"stopped"/);
  });
});
