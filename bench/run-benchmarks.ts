import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * `make bench`: every benchmark in its own process (a clean heap, and --expose-gc for memory
 * figures), one after another so they do not compete for the machine's two cores.
 */
const BENCHMARKS = ['decide.js', 'hostile-bodies.js', 'snapshot-load.js'];

let failed = false;
for (const file of BENCHMARKS) {
  const path = fileURLToPath(new URL(file, import.meta.url));
  console.log(`\n== ${file}`);
  const result = spawnSync(process.execPath, ['--expose-gc', path], { stdio: 'inherit' });
  if (result.status !== 0) failed = true;
}
process.exitCode = failed ? 1 : 0;
