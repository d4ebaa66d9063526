import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';

/** What a figure was measured on: it means little without the machine, and a shared one says so by its load. */
export interface Machine {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly kernel: string;
  readonly node: string;
  /** 1, 5 and 15 minutes, when the benchmark began. */
  readonly loadAverage: readonly [number, number, number];
}

function cpuModel(): string {
  try {
    const name = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1];
    if (name) return name.trim();
  } catch {
    // not Linux
  }
  return cpus()[0]?.model ?? 'unknown CPU';
}

export function describeMachine(): Machine {
  const [one = 0, five = 0, fifteen = 0] = loadavg();
  return {
    cpuModel: cpuModel(),
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: `Linux ${release()}`,
    node: process.version,
    loadAverage: [one, five, fifteen],
  };
}

export function machineLine(machine: Machine): string {
  return `${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.kernel}, Node ${machine.node}`;
}

export function loadLine(machine: Machine): string {
  return machine.loadAverage.map((value) => value.toFixed(2)).join(' / ');
}
