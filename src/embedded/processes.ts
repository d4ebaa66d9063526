import { createServer } from 'node:net';

/** Whether a process exists. EPERM says it does, run by another user. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A TCP port on 127.0.0.1 that nothing listens on now. */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

/**
 * `count` different free ports: each probe stays open until all have one, so two ports a process is
 * about to listen on (gRPC and metrics, say) cannot be the same one handed out twice.
 */
export async function freePorts(count: number): Promise<number[]> {
  const probes = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(
      probes.map(
        (probe) =>
          new Promise<number>((resolvePort, reject) => {
            probe.unref();
            probe.on('error', reject);
            probe.listen(0, '127.0.0.1', () => {
              const address = probe.address();
              if (address && typeof address === 'object') resolvePort(address.port);
              else reject(new Error('could not pick a free port'));
            });
          }),
      ),
    );
  } finally {
    await Promise.all(probes.map((probe) => new Promise((closed) => (probe.listening ? probe.close(closed) : closed(undefined)))));
  }
}
