import { readlinkSync } from 'node:fs';
import { isAlive } from './processes.js';

/*
 * Run detached beside a throw-away embedded PostgreSQL (tests, benchmarks) by the process that started
 * it: when that owner dies without stopping it (kill -9, a signal it did not handle), stops it. A
 * persistent server is taken over by the next start in its DATA_DIR; nothing ever starts again in a
 * temporary one, so without this it would run until the machine stops.
 *
 * Usage: node owner-watch.js <server pid> <cluster directory>, with an IPC channel to the owner: the
 * channel closes when the owner ends, however it ends.
 */

const SERVER_CHECK_MS = 1_000;
const [serverPid, clusterDir] = [Number(process.argv[2]), process.argv[3]];

/** Still the server we watch: a pid is reused once its process is gone, and another process must not be signalled. */
function serverRunning(): boolean {
  if (!Number.isInteger(serverPid) || serverPid <= 0 || !isAlive(serverPid)) return false;
  try {
    return readlinkSync(`/proc/${serverPid}/cwd`) === clusterDir;
  } catch {
    return false; // no /proc, or gone meanwhile: never signal what cannot be told apart
  }
}

// Stopped by its owner: nothing left to watch.
setInterval(() => {
  if (!serverRunning()) process.exit(0);
}, SERVER_CHECK_MS);

process.on('disconnect', () => {
  // Fast shutdown, as the owner's own stop does: ends sessions, writes a checkpoint.
  if (serverRunning()) process.kill(serverPid, 'SIGINT');
  process.exit(0);
});
