import { randomInt } from 'node:crypto';
import { createServer, type AddressInfo, type Server } from 'node:net';

/** EPERM says it exists, run by another user. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function signalIfThere(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // gone already, or not ours to signal: a caller that must know looks with isAlive
  }
}

/** On 127.0.0.1. */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

// Below the ephemeral ranges (Linux 32768–60999, macOS and Windows 49152 up): a port listen(0) hands out can be taken
// by any client socket before its server binds it, one picked here only by a listener.
const PICKED_PORTS = { from: 20_000, to: 32_767 } as const;
const PICK_ATTEMPTS = 200;

function probe(port: number): Promise<Server | undefined> {
  return new Promise((resolveProbe) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolveProbe(undefined));
    server.listen(port, '127.0.0.1', () => resolveProbe(server));
  });
}

/** Each probe stays open until all have one, so that no port is handed out twice. */
export async function freePorts(count: number): Promise<number[]> {
  const probes: Server[] = [];
  try {
    for (let attempt = 0; probes.length < count; attempt++) {
      // After many taken ports (a crowded range), whatever the system gives.
      const port = attempt < PICK_ATTEMPTS ? randomInt(PICKED_PORTS.from, PICKED_PORTS.to + 1) : 0;
      const opened = await probe(port);
      if (opened !== undefined) probes.push(opened);
      else if (port === 0) throw new Error('could not pick a free port on 127.0.0.1');
    }
    return probes.map((opened) => (opened.address() as AddressInfo).port);
  } finally {
    await Promise.all(probes.map((opened) => new Promise((closed) => opened.close(closed))));
  }
}
