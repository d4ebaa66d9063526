import { writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { GCProfiler } from 'node:v8';

/**
 * Loaded into a benchmarked server with NODE_OPTIONS=--import, so that the server's code is measured
 * unchanged. On SIGUSR2 it writes BENCH_PROBE_DIR/<pid>.json: the V8 heap bytes allocated since it
 * started, and the time spent in GC, from V8's own per-collection statistics (GCProfiler), plus the
 * process's current memory. Bytes allocated between two reports = used heap now − used heap then +
 * what every collection in between freed; buffers outside the V8 heap (externalMemory) are not counted.
 */
export interface ProbeReport {
  readonly pid: number;
  /** Increases with each report, so a reader can tell a fresh one from the last. */
  readonly sequence: number;
  readonly allocatedBytes: number;
  readonly collections: number;
  readonly gcMicros: number;
  /** Collections and their time since start, by V8's name for the kind: Scavenge (young) against MarkSweepCompact. */
  readonly gcByType: Readonly<Record<string, { readonly collections: number; readonly micros: number; readonly survivedBytes: number }>>;
  /** The longest single collection since the previous report, and V8's name for its kind (Scavenge, MarkSweepCompact, …). */
  readonly longestGcMicros: number;
  readonly longestGcType: string;
  readonly heapUsedBytes: number;
  readonly externalBytes: number;
  readonly rssBytes: number;
}

export const PROBE_DIR_VARIABLE = 'BENCH_PROBE_DIR';

type Collection = ReturnType<GCProfiler['stop']>['statistics'][number];
const YOUNG_SPACES = new Set(['new_space', 'new_large_object_space']);
const youngBytes = (spaces: Collection['beforeGC']['heapSpaceStatistics']): number =>
  spaces.filter((space) => YOUNG_SPACES.has(space.spaceName)).reduce((total, space) => total + space.spaceUsedSize, 0);
/** What a collection kept of the young generation (copied or promoted): a scavenge's cost grows with it. */
const survivedBytes = ({ beforeGC, afterGC }: Collection): number =>
  afterGC.heapStatistics.usedHeapSize - (beforeGC.heapStatistics.usedHeapSize - youngBytes(beforeGC.heapSpaceStatistics));

const directory = process.env[PROBE_DIR_VARIABLE];
if (directory) {
  const startUsed = process.memoryUsage().heapUsed;
  let freed = 0;
  let collections = 0;
  let gcMicros = 0;
  let sequence = 0;
  const gcByType: Record<string, { collections: number; micros: number; survivedBytes: number }> = {};
  let profiler = new GCProfiler();
  profiler.start();
  const writeReport = () => {
    // stop() and start() run without an allocation-triggered collection in between: none is missed.
    const { statistics } = profiler.stop();
    profiler = new GCProfiler();
    profiler.start();
    let longestGcMicros = 0;
    let longestGcType = '';
    for (const gc of statistics) {
      if (gc.cost > longestGcMicros) [longestGcMicros, longestGcType] = [gc.cost, gc.gcType];
      freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
      gcMicros += gc.cost;
      collections += 1;
      const ofType = (gcByType[gc.gcType] ??= { collections: 0, micros: 0, survivedBytes: 0 });
      ofType.collections += 1;
      ofType.micros += gc.cost;
      ofType.survivedBytes += survivedBytes(gc);
    }
    const memory = process.memoryUsage();
    const report: ProbeReport = {
      pid: process.pid,
      sequence,
      allocatedBytes: memory.heapUsed - startUsed + freed,
      collections,
      gcMicros,
      gcByType,
      longestGcMicros,
      longestGcType,
      heapUsedBytes: memory.heapUsed,
      externalBytes: memory.external,
      rssBytes: memory.rss,
    };
    const file = join(directory, `${process.pid}.json`);
    writeFileSync(`${file}.tmp`, JSON.stringify(report));
    renameSync(`${file}.tmp`, file);
    sequence += 1;
  };
  // A first report at once says that this process can be asked (a SIGUSR2 before the handler would kill it).
  writeReport();
  process.on('SIGUSR2', writeReport);
}
