import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../../src/embedded/embedded-postgres.js';

export const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
/** Who the suite's CLI changes are audited as, unless a test names someone else. */
export const TEST_ACTOR = 'test-suite';

export interface RunningService {
  readonly grpcTarget: string;
  readonly httpBase: string;
  /** http://127.0.0.1:<ADMIN_PORT> when the environment set ADMIN_ISSUER (a free port unless ADMIN_PORT is given). */
  readonly adminBase: string | undefined;
  readonly process: ChildProcess;
  /** Everything the service wrote to stdout and stderr so far (JSON log lines). */
  output(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

export interface ServiceOptions {
  /** RLIMIT_NOFILE (soft and hard) of the service process, set with util-linux's prlimit. */
  readonly openFileLimit?: number;
  /** Its own process group, which a test can signal as a terminal's Ctrl-C does. */
  readonly detached?: boolean;
  /** Return once /readyz answers at all, ready or not (default: wait for 200). */
  readonly untilAnswering?: boolean;
  /** node's own options before the script; none by default, as the image starts serve. */
  readonly nodeArguments?: readonly string[];
}

/** Starts `sitekey-authz serve` as a real child process, as the image does, and waits until /readyz answers 200. */
export async function startService(env: Record<string, string>, options: ServiceOptions = {}): Promise<RunningService> {
  const [grpcPort, httpPort, freeAdminPort] = await freePorts(3);
  const adminPort = env.ADMIN_ISSUER === undefined ? undefined : (env.ADMIN_PORT ?? String(freeAdminPort));
  const serve = [process.execPath, ...(options.nodeArguments ?? []), CLI, 'serve'];
  const [command = '', ...args] =
    options.openFileLimit === undefined ? serve : ['prlimit', `--nofile=${options.openFileLimit}:${options.openFileLimit}`, '--', ...serve];
  const child = spawn(command, args, {
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'info',
      GRPC_PORT: String(grpcPort),
      METRICS_PORT: String(httpPort),
      BIND_ADDRESS: '127.0.0.1',
      ...(adminPort === undefined ? {} : { ADMIN_PORT: adminPort }),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolveExit) => child.on('exit', (code) => resolveExit(code)));
  const httpBase = `http://127.0.0.1:${httpPort}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}:\n${output}`);
    try {
      const { status } = await fetch(`${httpBase}/readyz`);
      if (status === 200 || options.untilAnswering === true) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`serve was not ready within 20 s:\n${output}`);
    }
    await sleep(50);
  }
  const adminBase = adminPort === undefined ? undefined : `http://127.0.0.1:${adminPort}`;
  // The admin port opens right after the operator endpoints: wait for it too.
  while (adminBase !== undefined && options.untilAnswering !== true) {
    if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}:\n${output}`);
    try {
      await fetch(`${adminBase}/api/v1/openapi.json`);
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`the admin port did not answer within 20 s:\n${output}`);
      }
      await sleep(50);
    }
  }
  return {
    grpcTarget: `127.0.0.1:${grpcPort}`,
    httpBase,
    adminBase,
    process: child,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the real CLI against `databaseUrl`, optionally feeding standard input and setting more of the environment. */
/**
 * The CLI as a person runs it, named SITEKEY_ACTOR=test-suite: the suite runs as root in CI, where a
 * change without a name is refused (pass SITEKEY_ACTOR: '' to run without one).
 */
export async function runCli(databaseUrl: string, args: readonly string[], stdin?: string, env: Record<string, string> = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', SITEKEY_ACTOR: TEST_ACTOR, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(stdin ?? '');
  // 'close', not 'exit': a process may exit before all it wrote has been read from its pipes.
  const code = await new Promise<number | null>((resolveClose) => child.on('close', (exitCode) => resolveClose(exitCode)));
  return { code, stdout, stderr };
}
