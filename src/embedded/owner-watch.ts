import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive } from './processes.js';

// Stops a throw-away PostgreSQL whose owner died: `node owner-watch.js <server pid> <cluster directory>` with an IPC
// channel to the owner, which closes when the owner ends, however it ends.

const SERVER_CHECK_MS = 1_000;
const [serverPid, clusterDir] = [Number(process.argv[2]), process.argv[3]];

// A pid is reused once its process is gone: postmaster.pid names its server until it stops.
function serverRunning(): boolean {
  if (!Number.isInteger(serverPid) || serverPid <= 0 || clusterDir === undefined || !isAlive(serverPid)) return false;
  try {
    return Number(readFileSync(join(clusterDir, 'postmaster.pid'), 'utf8').split('\n', 1)[0]) === serverPid;
  } catch {
    return false; // gone meanwhile: never signal what cannot be told apart
  }
}

setInterval(() => {
  if (!isAlive(serverPid)) process.exit(0);
}, SERVER_CHECK_MS);

/** For a server just spawned to write its postmaster.pid. */
const STARTING_MS = 10_000;
const STARTING_CHECK_MS = 100;

function ownerGone(): void {
  const giveUpAt = Date.now() + STARTING_MS;
  const stopServer = (): void => {
    // Fast shutdown, as the owner's own stop does.
    if (serverRunning()) process.kill(serverPid, 'SIGINT');
    else if (isAlive(serverPid) && Date.now() < giveUpAt) return void setTimeout(stopServer, STARTING_CHECK_MS);
    process.exit(0);
  };
  stopServer();
}

process.on('disconnect', ownerGone);
// An owner killed while this script was still loading closed the channel before anyone listened.
if (!process.connected) ownerGone();
