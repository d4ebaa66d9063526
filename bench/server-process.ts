import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readdirSync, readFileSync, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePorts } from '../src/embedded/embedded-postgres.js';
import { signalIfThere } from '../src/embedded/processes.js';
import { CLI } from '../test/support/service.js';
import { PROBE_DIR_VARIABLE, type ProbeReport } from './heap-probe.js';
import { onInterrupt } from './interrupt.js';

const PROBE = pathToFileURL(fileURLToPath(new URL('heap-probe.js', import.meta.url))).href;
const NOOP = fileURLToPath(new URL('noop-server.js', import.meta.url));
/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on every Linux). */
const CLOCK_TICKS_PER_SECOND = 100;
const READY_WITHIN_MS = 60_000;

/** A benchmarked server: a child process (and whatever processes it starts) serving Check on `grpcPort`. */
export interface BenchServer {
  readonly name: string;
  readonly grpcPort: number;
  /** /metrics of `serve`; undefined for the no-op. */
  readonly metricsUrl: string | undefined;
  readonly pid: number;
  /** From the exec to the first 200 from /readyz (`serve`) or to its port printed (the no-op), in ms. */
  readonly startupMs: number;
  /** The process and its descendants (WORKERS), as they are now. */
  pids(): number[];
  /** CPU seconds (user + system) used so far by the process tree. */
  cpuSeconds(): number;
  /** A fresh heap-probe report from every process of the tree. */
  probe(): Promise<ProbeReport[]>;
  /** Resident memory and open descriptors of the tree, from /proc. */
  memory(): { rssBytes: number; fds: number };
  stop(): Promise<void>;
}

interface ProcStat {
  readonly ppid: number;
  readonly cpuTicks: number;
}

function procStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    return { ppid: Number(fields[1]), cpuTicks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined; // gone
  }
}

function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (stat === undefined) continue;
    const siblings = children.get(stat.ppid) ?? [];
    siblings.push(Number(entry));
    children.set(stat.ppid, siblings);
  }
  const tree: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    tree.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return tree;
}

function rssBytes(pid: number): number {
  try {
    const kib = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kib === undefined ? 0 : Number(kib) * 1024;
  } catch {
    return 0;
  }
}

function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

function readProbe(directory: string, pid: number): ProbeReport | undefined {
  try {
    return JSON.parse(readFileSync(`${directory}/${pid}.json`, 'utf8')) as ProbeReport;
  } catch {
    return undefined;
  }
}

async function probeTree(directory: string, pids: readonly number[]): Promise<ProbeReport[]> {
  const reports: ProbeReport[] = [];
  for (const pid of pids) {
    // Only Node processes that loaded the probe: each wrote a report when it did.
    const last = readProbe(directory, pid);
    if (last === undefined) continue;
    process.kill(pid, 'SIGUSR2');
    for (const deadline = Date.now() + 5_000; ; await sleep(5)) {
      const fresh = readProbe(directory, pid);
      if (fresh !== undefined && fresh.sequence > last.sequence) {
        reports.push(fresh);
        break;
      }
      if (Date.now() > deadline) throw new Error(`process ${pid} did not answer the heap probe within 5 s`);
    }
  }
  return reports;
}

/**
 * Runs `work` with every process of `servers` stopped (SIGSTOP), and continues them after, however
 * `work` ends. An idle server still wakes up (`serve` about a hundred times a second, for its
 * event-loop delay gauge and its timers) on the CPU the servers share, and takes its turn, and the
 * caches, from the one being measured: identical `serve` processes measured beside eleven idle ones
 * ran from 62 to 85 % of the no-op in one run, and from 76 to 82 % with those stopped.
 */
export async function withStopped<T>(servers: readonly BenchServer[], work: () => Promise<T>): Promise<T> {
  const stopped = servers.flatMap((server) => server.pids());
  for (const pid of stopped) signalIfThere(pid, 'SIGSTOP');
  try {
    return await work();
  } finally {
    for (const pid of stopped) signalIfThere(pid, 'SIGCONT');
  }
}

function benchServer(name: string, child: ChildProcess, grpcPort: number, metricsUrl: string | undefined, probeDir: string, startupMs: number): BenchServer {
  const pid = child.pid!;
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  const stop = async () => {
    // A stopped process would hold SIGTERM until continued.
    for (const member of processTree(pid)) signalIfThere(member, 'SIGCONT');
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(killer);
  };
  const forget = onInterrupt(stop);
  return {
    name,
    grpcPort,
    metricsUrl,
    pid,
    startupMs,
    pids: () => processTree(pid),
    cpuSeconds: () => processTree(pid).reduce((sum, p) => sum + (procStat(p)?.cpuTicks ?? 0), 0) / CLOCK_TICKS_PER_SECOND,
    probe: () => probeTree(probeDir, processTree(pid)),
    memory: () => {
      const tree = processTree(pid);
      return { rssBytes: tree.reduce((sum, p) => sum + rssBytes(p), 0), fds: tree.reduce((sum, p) => sum + openFds(p), 0) };
    },
    stop: async () => {
      forget();
      await stop();
    },
  };
}

/** Waits for the report each process writes when it loads the probe: from then on it may be signalled. */
async function firstProbe(directory: string, pid: number, child: ChildProcess): Promise<void> {
  for (const deadline = Date.now() + READY_WITHIN_MS; !existsSync(`${directory}/${pid}.json`); await sleep(20)) {
    if (child.exitCode !== null) throw new Error(`process ${pid} exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error(`process ${pid} never loaded the heap probe`);
  }
}

export interface ServeOptions {
  readonly name: string;
  readonly databaseUrl: string;
  /** The bench's working directory: the log file and probe reports go there. */
  readonly workDir: string;
  /** More of the environment, e.g. WORKERS or APIKEY_SUNSET_ENFORCE. */
  readonly env?: Readonly<Record<string, string>>;
  /** Node's own options before the script, e.g. --cpu-prof (which NODE_OPTIONS may not carry). */
  readonly nodeArguments?: readonly string[];
}

function probeEnv(probeDir: string): Record<string, string> {
  return { NODE_OPTIONS: `--import=${PROBE}`, [PROBE_DIR_VARIABLE]: probeDir };
}

/**
 * A real `sitekey-authz serve` (dist/src/cli/main.js), started as the image starts it and
 * logging at info to a file as in production; resolves once /readyz says 200.
 */
export async function startServe(options: ServeOptions): Promise<BenchServer> {
  const [grpcPort = 0, metricsPort = 0] = await freePorts(2);
  const logFile = `${options.workDir}/${options.name.replace(/\W+/g, '-')}.log`;
  const log = openSync(logFile, 'a');
  const started = performance.now();
  const child = spawn(process.execPath, [...(options.nodeArguments ?? []), CLI, 'serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'info',
      GRPC_PORT: String(grpcPort),
      METRICS_PORT: String(metricsPort),
      BIND_ADDRESS: '127.0.0.1',
      DATABASE_URL: options.databaseUrl,
      MIGRATE_ON_START: 'false',
      ...probeEnv(options.workDir),
      ...options.env,
    },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const base = `http://127.0.0.1:${metricsPort}`;
  let startupMs = 0;
  // Asked often enough for its start-up time to be read to a few tens of ms.
  for (const deadline = Date.now() + READY_WITHIN_MS; ; await sleep(20)) {
    if (child.exitCode !== null) throw new Error(`serve (${options.name}) exited with ${child.exitCode}; see ${logFile}`);
    const status = await fetch(`${base}/readyz`).then((response) => response.status, () => 0);
    if (status === 200) {
      startupMs = performance.now() - started;
      break;
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`serve (${options.name}) was not ready within ${READY_WITHIN_MS / 1000} s; see ${logFile}`);
    }
  }
  await firstProbe(options.workDir, child.pid!, child);
  return benchServer(options.name, child, grpcPort, `${base}/metrics`, options.workDir, startupMs);
}

/**
 * The no-op Check server (noop-server.ts) in its own process, answering as `serve` would for siteId
 * and keyId, or for a token of tokenClient when that is given; with serve's node options, so that the
 * floor is not slower for a reason serve avoids.
 */
export async function startNoop(options: {
  readonly workDir: string;
  readonly siteId: string;
  readonly keyId: string;
  readonly tokenClient?: string;
  /** Answer the 102 of a wrong key masked so, instead of an allow. */
  readonly wrongKey?: string;
  readonly nodeArguments?: readonly string[];
  /** Load every site of this database at start and hold them, as `serve` holds its snapshot. */
  readonly holdSnapshotOf?: string;
}): Promise<BenchServer> {
  const credential =
    options.wrongKey !== undefined ? ['--wrong-key', options.wrongKey] : options.tokenClient === undefined ? [options.keyId] : ['--token-client', options.tokenClient];
  const name = options.wrongKey !== undefined ? 'no-op (102)' : options.tokenClient === undefined ? 'no-op' : 'no-op (token)';
  return startScriptServer({
    name,
    script: NOOP,
    args: [options.siteId, ...credential],
    workDir: options.workDir,
    nodeArguments: options.nodeArguments,
    env: options.holdSnapshotOf ? { HOLD_SNAPSHOT_DATABASE_URL: options.holdSnapshotOf } : {},
  });
}

/** A bench script serving Check in its own process, ready once it prints {"port":N} on its standard output. */
export async function startScriptServer(options: {
  readonly name: string;
  readonly script: string;
  readonly args: readonly string[];
  readonly workDir: string;
  readonly nodeArguments?: readonly string[] | undefined;
  readonly env?: Readonly<Record<string, string>>;
}): Promise<BenchServer> {
  const started = performance.now();
  const child = spawn(process.execPath, [...(options.nodeArguments ?? []), options.script, ...options.args], {
    env: { PATH: process.env.PATH ?? '', ...probeEnv(options.workDir), ...options.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolvePort, reject) => {
    // Its line among whatever else Node prints there (--trace-gc does); the rest of its output is dropped.
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (!line.startsWith('{"port":')) return;
      resolvePort((JSON.parse(line) as { port: number }).port);
      lines.close();
      child.stdout!.resume();
    });
    child.once('exit', (code) => reject(new Error(`${options.name} exited with ${code}`)));
  });
  const startupMs = performance.now() - started;
  await firstProbe(options.workDir, child.pid!, child);
  return benchServer(options.name, child, port, undefined, options.workDir, startupMs);
}
