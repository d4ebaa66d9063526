import { timedCheck } from '../test/support/check-load.js';
import { authorizationClient, type CheckArguments } from '../test/support/envoy-client.js';
import { operatorGet } from '../test/support/operator-http.js';
import { tableRow, type Row } from './abuse-watch.js';
import type { BenchServer } from './server-process.js';

/** How long to wait, after the last connection, for the replacement to say it is ready. */
const REPLACEMENT_WAIT_MS = 20_000;

interface WorkerReadiness {
  readonly pid: number;
  readonly ready: boolean;
}

async function workers(serve: BenchServer): Promise<{ ready: boolean; workers: WorkerReadiness[] }> {
  const base = serve.metricsUrl!.replace(/\/metrics$/, '');
  const answer = await operatorGet(`${base}/readyz`, 5_000);
  const body = JSON.parse(answer.body) as { workers?: WorkerReadiness[] };
  return { ready: answer.status === 200, workers: body.workers ?? [] };
}

/**
 * `serve` with WORKERS=2: `connections` fresh connections, each sending one check, `concurrency` at a
 * time; once a tenth of them are answered (none in flight), one worker is killed (SIGKILL). The
 * replacement loads its snapshot (100,000 sites) while the rest keep arriving: none may be handed to a
 * worker that cannot decide.
 */
export async function workerReplaced(serve: BenchServer, args: CheckArguments, connections: number, concurrency = 8): Promise<Row> {
  const before = await workers(serve);
  const victim = before.workers[0];
  if (!before.ready || victim === undefined || before.workers.length !== 2) throw new Error(`serve is not ready with 2 workers: ${JSON.stringify(before)}`);
  const outcomes = new Map<string, number>();
  const failures: string[] = [];
  let next = 0;
  let killedAt: number | undefined;
  let replacementReadyAt: number | undefined;
  // Watches /readyz from the kill until the replacement is ready, or REPLACEMENT_WAIT_MS after the connections.
  let finishedAt: number | undefined;
  const watching = (async () => {
    while (replacementReadyAt === undefined && (finishedAt === undefined || performance.now() - finishedAt < REPLACEMENT_WAIT_MS)) {
      if (killedAt !== undefined) {
        const now = await workers(serve).catch(() => undefined);
        if (now?.ready && !now.workers.some((worker) => worker.pid === victim.pid)) replacementReadyAt = performance.now();
      }
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
  })();
  const batch = async (count: number) => {
    const until = next + count;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < until) {
          next += 1;
          const client = authorizationClient(`127.0.0.1:${serve.grpcPort}`, { 'grpc.use_local_subchannel_pool': 1 });
          const call = await timedCheck(client, args);
          client.close();
          const outcome = String(call.outcome).split(':')[0] ?? '';
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
          if (outcome !== 'allow') failures.push(`${outcome} sent ${((call.startedMs - (killedAt ?? call.startedMs)) / 1000).toFixed(2)} s after the kill, answered in ${((call.endedMs - call.startedMs) / 1000).toFixed(1)} s`);
        }
      }),
    );
  };
  const started = performance.now();
  // The kill falls between connections: no check is in flight on the victim, so an UNAVAILABLE is a
  // connection handed to a worker that could not answer it, not a call cut by the crash.
  await batch(Math.round(connections / 10));
  process.kill(victim.pid, 'SIGKILL');
  killedAt = performance.now();
  await batch(connections - next);
  const finished = performance.now();
  finishedAt = finished;
  await watching;
  const unavailable = outcomes.get('UNAVAILABLE') ?? 0;
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const replacement =
    replacementReadyAt === undefined
      ? `the replacement was not ready ${seconds(performance.now() - killedAt!)} after the kill`
      : `the replacement was ready ${seconds(replacementReadyAt - killedAt!)} after the kill${replacementReadyAt > finished ? ', after the last connection' : ''}`;
  return tableRow(
    `WORKERS=2, a worker killed (SIGKILL) while ${connections} fresh connections each send one check`,
    `${unavailable} answered UNAVAILABLE; answers ${[...outcomes].map(([outcome, n]) => `${n} × ${outcome}`).join(', ')}; ` +
      `connections over ${seconds(finished - started)}, the kill at ${seconds((killedAt ?? finished) - started)}; ${replacement}` +
      (failures.length > 0 ? `; ${failures.slice(0, 5).join('; ')}` : ''),
    // The goal is the replacement's. A connection the primary handed to the killed worker before it
    // learnt of the death goes to the other worker (ConnectionHandoff): any other answer than allow
    // above, a DEADLINE_EXCEEDED say, would be one lost.
    '0 UNAVAILABLE: a worker gets connections only once it can decide',
    unavailable === 0,
  );
}
