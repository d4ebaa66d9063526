import { status as grpcStatus } from '@grpc/grpc-js';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { DEFAULT_VERIFICATION_LIMITS } from '../src/token/verification-budget.js';
import { signedToken, signingKey } from '../test/support/jwks-server.js';
import { CHECK_GOAL_MS, checksText, sampleOf, scrape, shareMet, startPacedChecks, startRssPeak, summariseChecks, tableRow, withRss, type Row } from './abuse-watch.js';
import { BENCH_TOKEN_AUDIENCE, BENCH_TOKEN_ISSUER, type BenchIssuer } from './bench-issuer.js';
import type { FloodData, FloodReport } from './forged-token-flood.js';
import type { BenchServer } from './server-process.js';

/*
 * The partner-token row of the abuse benchmark: a flood of forged tokens from one address at the
 * Check port, while a known token and an API key are checked from another.
 */

/** Tokens signed with the key the issuer does not publish, cycled through by the flood; each still costs serve a signature check. */
const ROGUE_TOKENS = 256;
const WARM_UP_MS = 500;

/** The tokens the flood sends, shaped like `issuer`'s for `clientId`: under its published kid, none signed by its key. */
async function floodData(port: number, perSecond: number, sourceAddress: string, issuer: BenchIssuer, clientId: string): Promise<FloodData> {
  const now = Math.floor(Date.now() / 1000);
  const claims = { iss: BENCH_TOKEN_ISSUER, aud: BENCH_TOKEN_AUDIENCE, sub: clientId, client_id: clientId, iat: now, exp: now + 3_600 };
  const rogue = await signingKey(issuer.kid);
  const rogueTokens = await Promise.all(Array.from({ length: ROGUE_TOKENS }, (_, i) => signedToken(rogue, { ...claims, jti: `rogue-${i}` })));
  const header = Buffer.from(JSON.stringify({ alg: 'RS256', kid: issuer.kid, typ: 'at+jwt' })).toString('base64url');
  return { port, perSecond, sourceAddress, header, claims, rogueTokens };
}

/** forged-token-flood.ts on a thread of its own, so that neither the flood nor this process's watch delays the other; resolves once its messages are encoded. */
async function readyFlood(data: FloodData): Promise<{ start(): void; stop(): Promise<FloodReport> }> {
  const worker = new Worker(new URL('forged-token-flood.js', import.meta.url), { workerData: data });
  const failed = once(worker, 'error').then(([error]) => Promise.reject(error as Error));
  await Promise.race([once(worker, 'message'), failed]);
  return {
    start: () => worker.postMessage('start'),
    async stop() {
      const reported = once(worker, 'message').then(([report]) => report as FloodReport);
      worker.postMessage('stop');
      const report = await Promise.race([reported, failed]);
      await worker.terminate();
      return report;
    },
  };
}

/** Undecided (gRPC UNAVAILABLE) is what the budget answers; a CheckResponse code is a decision (16: refused, 0: allowed). */
function outcomesText(outcomes: Record<string, number>): string {
  const named = (outcome: string) =>
    outcome === `rpc-${grpcStatus.UNAVAILABLE}` ? 'UNAVAILABLE (undecided)' : outcome.startsWith('rpc-') ? `gRPC status ${outcome.slice(4)}` : outcome === 'unanswered' ? outcome : `CheckResponse code ${outcome}`;
  return Object.entries(outcomes)
    .sort(([, a], [, b]) => b - a)
    .map(([outcome, n]) => `${n.toLocaleString('en')} × ${named(outcome)}`)
    .join(', ');
}

/**
 * `perSecond` forged tokens a second from `floodAddress` for `attackMs` (forgedTokenFlood), while a
 * process of its own checks `keyMessage` (an API key) and another `tokenMessage` (a token serve has
 * already verified) every 50 ms from the bench's client address. The signature checks serve started
 * are the tokens it refused for their signature; those beyond the source's budget are answered undecided.
 */
export async function forgedTokens(
  serve: BenchServer,
  issuer: BenchIssuer,
  clientId: string,
  messages: { readonly key: Buffer; readonly token: Buffer },
  options: { readonly perSecond: number; readonly floodAddress: string; readonly attackMs: number; readonly afterMs: number },
): Promise<Row> {
  const flood = await readyFlood(await floodData(serve.grpcPort, options.perSecond, options.floodAddress, issuer, clientId));
  const rss = startRssPeak(serve);
  const keyChecks = startPacedChecks(serve.grpcPort, messages.key);
  const tokenChecks = startPacedChecks(serve.grpcPort, messages.token);
  let report: FloodReport;
  let floodMs: number;
  let drainedMs: number;
  let cpu: number;
  let cpuDrained: number;
  let before: string;
  const from = performance.now() + WARM_UP_MS;
  try {
    await sleep(WARM_UP_MS);
    before = await scrape(serve);
    const cpuBefore = serve.cpuSeconds();
    const started = performance.now();
    flood.start();
    await sleep(options.attackMs);
    cpu = serve.cpuSeconds() - cpuBefore;
    floodMs = performance.now() - started;
    report = await flood.stop();
    drainedMs = performance.now() - started;
    cpuDrained = serve.cpuSeconds() - cpuBefore;
  } catch (error) {
    await Promise.allSettled([flood.stop(), keyChecks.stop(), tokenChecks.stop(), rss.stop()]);
    throw error;
  } finally {
    await sleep(options.afterMs);
  }
  // After the drain and AFTER_MS: serve renders its exposition at most once a second.
  const after = await scrape(serve);
  const until = performance.now();
  const [keyCalls, tokenCalls] = await Promise.all([keyChecks.stop(), tokenChecks.stop()]);
  const peak = await rss.stop();
  const keys = summariseChecks(keyCalls, from, until);
  const tokens = summariseChecks(tokenCalls, from, until);
  const counted = (name: string, labels: string) => sampleOf(after, name, labels) - sampleOf(before, name, labels);
  const signatureChecks = counted('sitekey_authz_token_refusals_total', '{reason="signature"}');
  const budgetSpent = counted('sitekey_authz_checks_undecided_total', '{reason="verification-budget"}');
  const { perAddress } = DEFAULT_VERIFICATION_LIMITS;
  const allowedChecks = Math.floor(perAddress.burst + (perAddress.perSecond * drainedMs) / 1000);
  const cores = cpu / (floodMs / 1000);
  // What CPU serve spent while the flood ran and drained, over the forged checks it decided or left undecided: a signature check alone is ~300 µs.
  const forgedAnswered = signatureChecks + budgetSpent;
  const perCheck = forgedAnswered === 0 ? 'n/a' : Math.round((cpuDrained * 1e6) / forgedAnswered).toLocaleString('en');
  const measured = tableRow(
    `${options.perSecond.toLocaleString('en')} forged partner tokens a second under the issuer's kid (half signed by a key it does not publish, half a random signature) from ${options.floodAddress}, ${options.attackMs / 1000} s`,
    `flood answers ${outcomesText(report.outcomes)} of ${report.sent.toLocaleString('en')} sent (${Math.round(report.sent / (floodMs / 1000)).toLocaleString('en')}/s)${report.skipped > 0 ? ` (${report.skipped.toLocaleString('en')} not sent: too many unanswered)` : ''}; ` +
      `${signatureChecks.toLocaleString('en')} signature checks refused, ${budgetSpent.toLocaleString('en')} undecided for the verification budget; serve's CPU ${cores.toFixed(2)} cores over the flood, ${perCheck} µs per forged check it answered; ` +
      `API key: ${checksText(keys)}; known token: ${checksText(tokens)}`,
    `≥ 90 % of key and token checks within ${CHECK_GOAL_MS} ms, signature checks ≤ the source's budget (${perAddress.burst} + ${perAddress.perSecond}/s: ${allowedChecks.toLocaleString('en')}), none allowed, the rest undecided, serve below one core`,
    shareMet(keys) && shareMet(tokens) && signatureChecks <= allowedChecks && budgetSpent > 0 && (report.outcomes['0'] ?? 0) === 0 && cores < 1,
  );
  return withRss(measured, peak);
}
