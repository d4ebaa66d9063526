import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { withStopped, type BenchServer } from '../../../bench/server-process.js';

/** The state letter of /proc/<pid>/stat: T while stopped by a signal. */
function state(pid: number): string {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2, text.lastIndexOf(')') + 3);
}

async function stateBecomes(pid: number, stopped: boolean): Promise<void> {
  for (const deadline = Date.now() + 10_000; (state(pid) === 'T') !== stopped; await sleep(10)) {
    if (Date.now() > deadline) assert.fail(`process ${pid} is in state ${state(pid)}, not ${stopped ? 'stopped' : 'running'}`);
  }
}

/** An idle process, standing in for a benchmarked server. */
function idleServer(children: ChildProcess[]): BenchServer {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 10)'], { stdio: 'ignore' });
  children.push(child);
  return { pids: () => [child.pid!] } as BenchServer;
}

describe('bench servers stopped while another is measured', () => {
  const children: ChildProcess[] = [];
  after(() => {
    for (const child of children) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
  });

  it('stops every other server for the work and continues them after it', async () => {
    const [first, second] = [idleServer(children), idleServer(children)];
    const seen = await withStopped([first, second], async () => {
      await stateBecomes(first.pids()[0]!, true);
      await stateBecomes(second.pids()[0]!, true);
      return 'measured';
    });
    assert.equal(seen, 'measured');
    await stateBecomes(first.pids()[0]!, false);
    await stateBecomes(second.pids()[0]!, false);
  });

  it('continues them when the work fails', async () => {
    const server = idleServer(children);
    await assert.rejects(
      withStopped([server], async () => {
        await stateBecomes(server.pids()[0]!, true);
        throw new Error('h2load failed');
      }),
      /h2load failed/,
    );
    await stateBecomes(server.pids()[0]!, false);
  });
});
