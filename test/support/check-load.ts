import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { authorizationClient, checkRequest, verdict, type CheckArguments } from './envoy-client.js';

/** One Check as its caller saw it: when it was sent and answered (performance.now()), and the answer. */
export interface CallRecord {
  readonly startedMs: number;
  readonly endedMs: number;
  /** 'allow', the error id of a denial, or the gRPC status name of a failed RPC with its details. */
  readonly outcome: 'allow' | number | string;
}

export interface CheckLoad {
  /** Every call answered so far, in the order answered. */
  readonly calls: readonly CallRecord[];
  /** Resolves once `count` calls in all have been answered; fails after `withinMs`. */
  answered(count: number, withinMs: number): Promise<void>;
  /** Whether `count` calls in all were answered within `withinMs`: resolves false at the deadline instead of failing. */
  answeredWithin(count: number, withinMs: number): Promise<boolean>;
  /** Starts no new call, and resolves with every call once those in flight are answered. */
  stop(): Promise<readonly CallRecord[]>;
}

type Client = ReturnType<typeof authorizationClient>;

function describeFailure(error: ServiceError): string {
  return `${GrpcStatus[error.code] ?? error.code}: ${error.details}`;
}

/** One Check of Envoy's usual shape (see checkRequest); never rejects: a failure is an outcome. */
export function timedCheck(client: Client, args: CheckArguments, deadlineMs = 10_000): Promise<CallRecord> {
  return timedRequest(client, checkRequest(args), deadlineMs);
}

/** One Check of any CheckRequest (as JS for Envoy's upstream protos); never rejects: a failure is an outcome. */
export function timedRequest(client: Client, request: unknown, deadlineMs = 10_000): Promise<CallRecord> {
  const startedMs = performance.now();
  return new Promise((resolveCall) =>
    client.Check(request, { deadline: Date.now() + deadlineMs }, (error, response) => {
      const endedMs = performance.now();
      let outcome: CallRecord['outcome'];
      try {
        outcome = error ? describeFailure(error) : verdict(response);
      } catch (unreadable) {
        outcome = `unreadable response: ${String(unreadable)}`;
      }
      resolveCall({ startedMs, endedMs, outcome });
    }),
  );
}

/** A load over `calls`, which its callers fill in, stopped by `stopCallers`. */
function checkLoad(calls: CallRecord[], stopCallers: () => Promise<void>): CheckLoad {
  const answeredWithin = async (count: number, withinMs: number) => {
    const deadline = performance.now() + withinMs;
    while (calls.length < count) {
      if (performance.now() > deadline) return false;
      await sleep(10);
    }
    return true;
  };
  return {
    calls,
    answeredWithin,
    async answered(count, withinMs) {
      if (!(await answeredWithin(count, withinMs))) throw new Error(`only ${calls.length} of ${count} checks answered within ${withinMs} ms`);
    },
    async stop() {
      await stopCallers();
      return calls;
    },
  };
}

/**
 * `concurrency` callers on one client, each sending its next check as soon as the last is answered,
 * as Envoy's workers do on their long-lived connection under steady traffic.
 */
export function startCheckLoad(client: Client, args: CheckArguments, concurrency: number, onCall?: (call: CallRecord) => void): CheckLoad {
  const calls: CallRecord[] = [];
  let stopping = false;
  const callers = Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!stopping) {
        const call = await timedCheck(client, args);
        calls.push(call);
        onCall?.(call);
      }
    }),
  );
  return checkLoad(calls, async () => {
    stopping = true;
    await callers;
  });
}

const CALLER_SCRIPT = fileURLToPath(new URL('./check-caller.js', import.meta.url));

/**
 * startCheckLoad in a process of its own, as Envoy is: what the test process does meanwhile (a storm
 * it sends, connections it opens) does not delay these callers' answers, nor their measurement.
 */
export function startCheckLoadInChild(target: string, args: CheckArguments, concurrency: number): CheckLoad {
  const calls: CallRecord[] = [];
  const child = spawn(process.execPath, [CALLER_SCRIPT, target, JSON.stringify(args), String(concurrency)], { stdio: ['pipe', 'pipe', 'inherit'] });
  // 'close', not 'exit': every line it wrote has been read by then.
  const exited = new Promise<number | null>((resolveExit) => child.on('close', (code) => resolveExit(code)));
  // The child's times are on the wall clock's scale (timeOrigin + now); put them on ours.
  createInterface({ input: child.stdout }).on('line', (line) => {
    const call = JSON.parse(line) as CallRecord;
    calls.push({ ...call, startedMs: call.startedMs - performance.timeOrigin, endedMs: call.endedMs - performance.timeOrigin });
  });
  let stopped: Promise<void> | undefined;
  return checkLoad(calls, () => {
    stopped ??= (async () => {
      child.stdin.end();
      const code = await exited;
      if (code !== 0) throw new Error(`the check callers' process exited with ${code}`);
    })();
    return stopped;
  });
}

/** Outcomes other than the expected one, counted by outcome: empty when every call got it. */
export function unexpectedOutcomes(calls: readonly CallRecord[], expected: CallRecord['outcome']): Map<CallRecord['outcome'], number> {
  const counts = new Map<CallRecord['outcome'], number>();
  for (const call of calls) if (call.outcome !== expected) counts.set(call.outcome, (counts.get(call.outcome) ?? 0) + 1);
  return counts;
}
