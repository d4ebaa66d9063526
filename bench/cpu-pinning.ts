import { spawnSync } from 'node:child_process';

/**
 * Which CPUs the load generator and the servers under test run on. On a machine of a few cores,
 * h2load and a server left to the scheduler take each other's cores by turns (the server's GC
 * threads too), and a round measures how the scheduler shared them as much as what a check costs.
 * Pinned, h2load runs on the first CPU this process may use and every server on the others, the
 * same for `serve` and its no-op: the ratio is that of the CPU each spends on a check.
 */
export interface CpuPlan {
  /** taskset lists: the load generator's CPU, the servers', and all of them. */
  readonly load: string;
  readonly servers: string;
  readonly all: string;
}

/** The CPUs in `taskset -c -p` output ("pid 42's current affinity list: 0-2,5"); undefined if it says none. */
export function affinityCpus(output: string): number[] | undefined {
  const list = /:\s*([\d,\s-]+)$/.exec(output.trim())?.[1];
  if (list === undefined) return undefined;
  const cpus = list.split(',').flatMap((part) => {
    const [from, to = from] = part.trim().split('-').map(Number);
    return from === undefined || to === undefined || !(to >= from) ? [] : Array.from({ length: to - from + 1 }, (_, i) => from + i);
  });
  return cpus.length > 0 ? cpus : undefined;
}

/** The CPUs this process may run on; undefined without taskset. */
function allowedCpus(): number[] | undefined {
  const result = spawnSync('taskset', ['-c', '-p', String(process.pid)], { encoding: 'utf8' });
  return result.status === 0 ? affinityCpus(result.stdout) : undefined;
}

/** The plan for this machine: undefined with BENCH_PIN=0, one CPU, or no taskset (util-linux). */
export function cpuPlan(env: NodeJS.ProcessEnv = process.env): CpuPlan | undefined {
  if (env.BENCH_PIN === '0') return undefined;
  const cpus = allowedCpus();
  if (cpus === undefined || cpus.length < 2) return undefined;
  const [load, ...servers] = cpus;
  return { load: String(load), servers: servers.join(','), all: cpus.join(',') };
}

/** Moves every thread of these processes onto `cpus` (taskset -a -p -c). */
export function pinProcesses(pids: readonly number[], cpus: string): void {
  for (const pid of pids) {
    const result = spawnSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`taskset could not move process ${pid} onto CPUs ${cpus}: ${result.stderr.trim()}`);
  }
}
