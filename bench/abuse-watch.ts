import { spawn } from 'node:child_process';
import { podLimits } from '../test/deploy/pod-limits.js';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { operatorGet } from '../test/support/operator-http.js';
import { samples } from '../test/support/exposition.js';
import type { BenchServer } from './server-process.js';

/*
 * What the abuse benchmark watches while an attack runs, each from outside serve: paced checks from
 * another process, kubelet-like /healthz probes, serve's RSS from /proc, and its /metrics.
 */

/** The memory the attacks are held to: the pod's limit in deploy/kubernetes/base/deployment.yaml. */
export const POD_MEMORY_LIMIT_BYTES = podLimits().memoryLimitBytes;
/** The slowest answer a check may get under attack. */
export const CHECK_GOAL_MS = 250;
/** kubelet's periodSeconds and timeoutSeconds, made finer: a probe every 100 ms, 2 s to answer. */
const PROBE_EVERY_MS = 100;
const PROBE_TIMEOUT_MS = 2_000;

export const mib = (bytes: number): string => `${Math.round(bytes / 2 ** 20)} MiB`;
export const percent = (part: number, whole: number): string => (whole === 0 ? 'n/a' : `${((100 * part) / whole).toFixed(1)} %`);

/** One check as the paced caller saw it, on this process's performance.now() scale. */
export interface PacedCheck {
  readonly dueMs: number;
  readonly latencyMs: number;
  /** '0' for an allowed check; another CheckResponse status code, or rpc-<status>. */
  readonly outcome: string;
}

const CALLER = fileURLToPath(new URL('paced-check-caller.js', import.meta.url));

/**
 * One check every `intervalMs` from a process of its own (so that what this process does during an
 * attack delays nothing), open-loop: a stalled serve shows as every check that fell due meanwhile
 * being late, not as one slow check.
 */
export function startPacedChecks(port: number, message: Buffer, intervalMs = 50): { stop(): Promise<PacedCheck[]> } {
  const checks: PacedCheck[] = [];
  const child = spawn(process.execPath, [CALLER, String(port), String(intervalMs), message.toString('hex')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const closed = new Promise<number | null>((resolveClose) => child.on('close', (code) => resolveClose(code)));
  createInterface({ input: child.stdout }).on('line', (line) => {
    const [due = '', latency = '', outcome = ''] = line.split(' ');
    checks.push({ dueMs: Number(due) - performance.timeOrigin, latencyMs: Number(latency), outcome });
  });
  return {
    async stop() {
      child.stdin.end();
      const code = await closed;
      if (code !== 0) throw new Error(`the paced checks' process exited with ${code}`);
      return checks.sort((a, b) => a.dueMs - b.dueMs);
    },
  };
}

export interface CheckSummary {
  readonly checks: number;
  readonly withinGoal: number;
  readonly overGoal: number;
  readonly notAllowed: number;
  readonly slowestMs: number;
}

/** The checks that fell due between fromMs and untilMs. */
export function summariseChecks(checks: readonly PacedCheck[], fromMs: number, untilMs: number): CheckSummary {
  const window = checks.filter((check) => check.dueMs >= fromMs && check.dueMs < untilMs);
  const within = window.filter((check) => check.outcome === '0' && check.latencyMs <= CHECK_GOAL_MS).length;
  return {
    checks: window.length,
    withinGoal: within,
    overGoal: window.filter((check) => check.latencyMs > CHECK_GOAL_MS).length,
    notAllowed: window.filter((check) => check.outcome !== '0').length,
    slowestMs: window.reduce((slowest, check) => Math.max(slowest, check.latencyMs), 0),
  };
}

/** The goal every row with paced checks holds them to: at least 90 % allowed within CHECK_GOAL_MS. */
export const shareMet = (checks: CheckSummary): boolean => checks.checks > 0 && checks.withinGoal >= 0.9 * checks.checks;

export function checksText(summary: CheckSummary): string {
  return (
    `${summary.withinGoal} of ${summary.checks} paced checks allowed within ${CHECK_GOAL_MS} ms (${percent(summary.withinGoal, summary.checks)}), ` +
    `slowest ${Math.round(summary.slowestMs)} ms${summary.notAllowed > 0 ? `, ${summary.notAllowed} not allowed` : ''}`
  );
}

export interface ProbeSummary {
  readonly probes: number;
  readonly failed: number;
  readonly longestFailureRun: number;
  /** The longest time with no probe answered 200, from the window's start to its end. */
  readonly longestSilenceMs: number;
  /** Why probes failed (an HTTP status, an error), with how many. */
  readonly reasons: ReadonlyMap<string, number>;
  /** When the first and the last failed probe was sent, from the start of probing; NaN when none failed. */
  readonly failedFromMs: number;
  readonly failedUntilMs: number;
}

/** GET /healthz every 100 ms on a connection of its own, a failure being no 200 within 2 s, as kubelet would count it. */
export function startProbes(healthzUrl: string): { stop(): Promise<ProbeSummary> } {
  const startedMs = performance.now();
  const probes: Array<Promise<{ ok: boolean; sentMs: number; answeredMs: number; reason: string }>> = [];
  let probing = true;
  const loop = (async () => {
    while (probing) {
      const sentMs = performance.now() - startedMs;
      probes.push(
        operatorGet(healthzUrl, PROBE_TIMEOUT_MS).then(
          (answer) => ({ ok: answer.status === 200, sentMs, answeredMs: performance.now(), reason: `HTTP ${answer.status}` }),
          (error: NodeJS.ErrnoException) => ({ ok: false, sentMs, answeredMs: performance.now(), reason: error.code ?? (/within/.test(error.message) ? 'time-out' : error.message) }),
        ),
      );
      await sleep(PROBE_EVERY_MS);
    }
  })();
  return {
    async stop() {
      probing = false;
      await loop;
      const stoppedMs = performance.now();
      const results = await Promise.all(probes);
      let run = 0;
      let longestFailureRun = 0;
      for (const probe of results) {
        run = probe.ok ? 0 : run + 1;
        longestFailureRun = Math.max(longestFailureRun, run);
      }
      const answers = results.filter((probe) => probe.ok).map((probe) => probe.answeredMs).sort((a, b) => a - b);
      let longestSilenceMs = 0;
      let last = startedMs;
      for (const at of [...answers, stoppedMs]) {
        longestSilenceMs = Math.max(longestSilenceMs, at - last);
        last = Math.max(last, at);
      }
      const reasons = new Map<string, number>();
      for (const probe of results) if (!probe.ok) reasons.set(probe.reason, (reasons.get(probe.reason) ?? 0) + 1);
      const failedAt = results.filter((probe) => !probe.ok).map((probe) => probe.sentMs);
      return {
        probes: results.length,
        failed: failedAt.length,
        longestFailureRun,
        longestSilenceMs,
        reasons,
        failedFromMs: failedAt[0] ?? Number.NaN,
        failedUntilMs: failedAt[failedAt.length - 1] ?? Number.NaN,
      };
    },
  };
}

export function probesText(summary: ProbeSummary): string {
  return (
    `/healthz: ${summary.failed} of ${summary.probes} probes failed (${percent(summary.failed, summary.probes)}), ` +
    `at most ${summary.longestFailureRun} in a row, longest without an answer ${(summary.longestSilenceMs / 1000).toFixed(1)} s` +
    (summary.failed > 0
      ? ` (${[...summary.reasons].map(([reason, n]) => `${n} × ${reason}`).join(', ')}; sent from ${(summary.failedFromMs / 1000).toFixed(1)} s to ${(summary.failedUntilMs / 1000).toFixed(1)} s)`
      : '')
  );
}

/** The peak RSS of serve's process tree, and where serve's memory was near that peak. */
export interface RssPeak {
  readonly peakBytes: number;
  /** From the heap probe of serve's first process, taken when RSS last rose to a new high (by 16 MiB or more). */
  readonly nearPeak: string;
}

/** Reads RSS from /proc every 100 ms; on each new high, asks serve's heap probe where the memory is. */
export function startRssPeak(server: BenchServer): { stop(): Promise<RssPeak> } {
  let peak = server.memory().rssBytes;
  let probedAt = peak;
  let probing: Promise<void> | undefined;
  let nearPeak = 'no heap probe taken';
  const timer = setInterval(() => {
    peak = Math.max(peak, server.memory().rssBytes);
    if (probing !== undefined || peak < probedAt + 16 * 2 ** 20) return;
    probedAt = peak;
    probing = server
      .probe()
      .then(
        ([report]) => {
          if (report !== undefined) nearPeak = `at ${mib(report.rssBytes)} RSS: V8 heap ${mib(report.heapUsedBytes)}, buffers outside it ${mib(report.externalBytes)}`;
        },
        () => undefined,
      )
      .finally(() => (probing = undefined));
  }, 100);
  return {
    async stop() {
      clearInterval(timer);
      await probing;
      return { peakBytes: Math.max(peak, server.memory().rssBytes), nearPeak };
    },
  };
}

/** serve's /metrics, read on a connection of its own; the exposition is rendered at most once a second. */
export async function scrape(server: BenchServer): Promise<string> {
  if (server.metricsUrl === undefined) throw new Error(`${server.name} has no /metrics`);
  const answer = await operatorGet(server.metricsUrl, 10_000);
  if (answer.status !== 200) throw new Error(`${server.metricsUrl} answered ${answer.status}`);
  return answer.body;
}

/** A sample of a scrape ('' for a series without labels), 0 when absent. */
export function sampleOf(exposition: string, name: string, labels = ''): number {
  return samples(exposition, name).get(labels) ?? 0;
}

/** One attack's figures: what was measured, the goal, and whether it was met. */
export interface Row {
  readonly what: string;
  readonly measured: string;
  readonly goal: string;
  readonly met: boolean;
}

export function tableRow(what: string, measured: string, goal: string, met: boolean): Row {
  return { what, measured, goal, met };
}

export function rowLine(row: Row): string {
  return `${row.what}: ${row.measured} | goal: ${row.goal} | ${row.met ? 'met' : 'NOT met'}`;
}

/** The row with serve's peak RSS added to what it measured and to its goal. */
export function withRss(row: Row, rss: RssPeak): Row {
  return {
    what: row.what,
    measured: `${row.measured}; peak RSS ${mib(rss.peakBytes)} (${rss.nearPeak})`,
    goal: `${row.goal}, RSS < ${mib(POD_MEMORY_LIMIT_BYTES)}`,
    met: row.met && rss.peakBytes < POD_MEMORY_LIMIT_BYTES,
  };
}
