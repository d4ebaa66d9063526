import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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

/**
 * Still the server we watch: a pid is reused once its process is gone, and another process must not
 * be signalled. PostgreSQL's postmaster.pid names its server until that server stops (readable
 * without looking into another user's process, unlike /proc/<pid>/cwd, and on any system).
 */
function serverRunning(): boolean {
  if (!Number.isInteger(serverPid) || serverPid <= 0 || clusterDir === undefined || !isAlive(serverPid)) return false;
  try {
    return Number(readFileSync(join(clusterDir, 'postmaster.pid'), 'utf8').split('\n', 1)[0]) === serverPid;
  } catch {
    return false; // gone meanwhile: never signal what cannot be told apart
  }
}

// Stopped by its owner: nothing left to watch.
setInterval(() => {
  if (!isAlive(serverPid)) process.exit(0);
}, SERVER_CHECK_MS);

/** How long a server just spawned may take to write its postmaster.pid. */
const STARTING_MS = 10_000;
const STARTING_CHECK_MS = 100;

function ownerGone(): void {
  const giveUpAt = Date.now() + STARTING_MS;
  const stopServer = (): void => {
    // Fast shutdown, as the owner's own stop does: ends sessions, writes a checkpoint.
    if (serverRunning()) process.kill(serverPid, 'SIGINT');
    else if (isAlive(serverPid) && Date.now() < giveUpAt) return void setTimeout(stopServer, STARTING_CHECK_MS);
    process.exit(0);
  };
  stopServer();
}

process.on('disconnect', ownerGone);
// An owner killed while this script was still loading closed the channel before anyone listened.
if (!process.connected) ownerGone();
