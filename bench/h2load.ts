import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { AUTHORIZATION_SERVICE_NAME } from '../src/envoy/proto.js';

/** How to get h2load where `make bench` cannot install it itself. */
export const H2LOAD_HOW_TO =
  'h2load (the HTTP/2 load generator of nghttp2) is needed: on Debian or Ubuntu `sudo apt-get install nghttp2-client`, ' +
  'on Fedora `sudo dnf install nghttp2`, on macOS `brew install nghttp2`; then run it again';

function h2loadVersion(): string | undefined {
  const result = spawnSync('h2load', ['--version'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/**
 * The h2load version, installing Debian's nghttp2-client first when h2load is missing and this process
 * can (root, apt-get). Throws with H2LOAD_HOW_TO when it is still missing.
 */
export function ensureH2load(): string {
  const present = h2loadVersion();
  if (present !== undefined) return present;
  const canInstall = process.getuid?.() === 0 && spawnSync('apt-get', ['--version']).status === 0;
  if (canInstall) {
    console.log('h2load not found: installing Debian\'s nghttp2-client with apt-get');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = () => spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'nghttp2-client'], { stdio: 'inherit', env }).status === 0;
    // A fresh machine may have no package lists yet.
    if (!install()) {
      spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
      install();
    }
    const installed = h2loadVersion();
    if (installed !== undefined) return installed;
  }
  throw new Error(`h2load not found${canInstall ? ' and installing nghttp2-client failed' : ''}. ${H2LOAD_HOW_TO}`);
}

export interface LoadShape {
  /** Connections (-c) and streams in flight per connection (-m). */
  readonly connections: number;
  readonly streams: number;
  readonly seconds: number;
  /** Requests per second per connection (--rps); unset: as fast as the server answers. */
  readonly ratePerConnection?: number;
  /** --log-file: one line per request with its duration. */
  readonly logFile?: string;
  /** The CPUs h2load may run on (a taskset list, see cpu-pinning.ts); unset: any. */
  readonly cpus?: string;
}

export interface H2loadResult {
  readonly command: string;
  readonly done: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly errored: number;
  readonly timeout: number;
  readonly status2xx: number;
  readonly requestsPerSecond: number;
}

/** h2load's arguments for gRPC Check calls carrying the framed CheckRequest in `dataFile`. */
export function h2loadArguments(port: number, dataFile: string, shape: LoadShape): string[] {
  return [
    '-c', String(shape.connections),
    '-m', String(shape.streams),
    '-D', String(shape.seconds),
    ...(shape.ratePerConnection === undefined ? [] : ['--rps', String(shape.ratePerConnection)]),
    ...(shape.logFile === undefined ? [] : ['--log-file', shape.logFile]),
    '-d', dataFile,
    '-H', 'content-type: application/grpc',
    '-H', 'te: trailers',
    `http://127.0.0.1:${port}/${AUTHORIZATION_SERVICE_NAME}/Check`,
  ];
}

function count(output: string, pattern: RegExp, what: string): number {
  const match = pattern.exec(output);
  if (match?.[1] === undefined) throw new Error(`h2load printed no ${what}:\n${output}`);
  return Number(match[1]);
}

/** Parses h2load's summary ("requests: … succeeded …", "finished in …, N req/s", "status codes: N 2xx"). */
export function parseH2loadOutput(command: string, output: string): H2loadResult {
  return {
    command,
    done: count(output, /requests: \d+ total, \d+ started, (\d+) done/, 'requests done'),
    succeeded: count(output, /(\d+) succeeded/, 'succeeded count'),
    failed: count(output, /(\d+) failed/, 'failed count'),
    errored: count(output, /(\d+) errored/, 'errored count'),
    timeout: count(output, /(\d+) timeout/, 'timeout count'),
    status2xx: count(output, /status codes: (\d+) 2xx/, 'status codes'),
    requestsPerSecond: count(output, /finished in [\d.]+m?s, ([\d.]+) req\/s/, 'request rate'),
  };
}

function shellQuote(argument: string): string {
  return /^[\w@%+=:,./-]+$/.test(argument) ? argument : `'${argument.replace(/'/g, `'\\''`)}'`;
}

/** The command line as a reader would type it. */
export function commandLine(program: string, args: readonly string[]): string {
  return [program, ...args].map(shellQuote).join(' ');
}

/** The program and arguments that run h2load with `args`, on `cpus` when given. */
export function h2loadCommand(args: readonly string[], cpus?: string): { readonly program: string; readonly args: readonly string[] } {
  return cpus === undefined ? { program: 'h2load', args } : { program: 'taskset', args: ['-c', cpus, 'h2load', ...args] };
}

/** Runs one h2load, on `cpus` when given; several may run at once (one per request file). */
export function runH2load(args: readonly string[], cpus?: string): Promise<H2loadResult> {
  const run = h2loadCommand(args, cpus);
  const command = commandLine(run.program, run.args);
  return new Promise((resolveRun, reject) => {
    const child = spawn(run.program, run.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    // 'close', not 'exit': h2load's summary may still be in the pipe when the process has exited.
    child.once('close', (code, signal) => {
      if (code !== 0) reject(new Error(`${command} ${signal === null ? `exited with ${code}` : `was ended by ${signal}`}:\n${output}`));
      else {
        try {
          resolveRun(parseH2loadOutput(command, output));
        } catch (error) {
          reject(error as Error);
        }
      }
    });
  });
}

export interface LatencySummary {
  readonly requests: number;
  /** Requests h2load logged with status -1 (the stream failed). */
  readonly failedStreams: number;
  readonly p50Micros: number;
  readonly p99Micros: number;
  readonly p999Micros: number;
  readonly maxMicros: number;
}

/** The nearest-rank percentile of ascending durations. */
function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil(fraction * sorted.length));
  return sorted[rank - 1]!;
}

/** Percentiles of the durations in an h2load --log-file (tab-separated: start µs, status, duration µs). */
export function latencyFromLog(logFile: string): LatencySummary {
  const lines = readFileSync(logFile, 'utf8').split('\n');
  const durations: number[] = [];
  let failedStreams = 0;
  for (const line of lines) {
    const [, status, duration] = line.split('\t');
    if (status === undefined || duration === undefined) continue;
    if (status !== '200') failedStreams += 1;
    else durations.push(Number(duration));
  }
  const sorted = Float64Array.from(durations).sort();
  return {
    requests: sorted.length,
    failedStreams,
    p50Micros: percentile(sorted, 0.5),
    p99Micros: percentile(sorted, 0.99),
    p999Micros: percentile(sorted, 0.999),
    maxMicros: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1]!,
  };
}
