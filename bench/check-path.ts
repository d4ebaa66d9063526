import assert from 'node:assert/strict';
import { createWriteStream } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { GCProfiler } from 'node:v8';
import type { CheckInput, CredentialSnapshot, Decision } from '../src/decision/types.js';
import { createAuthorizationService, type AuthorizationServiceDeps } from '../src/envoy/authorization-service.js';
import { checkRequestReader } from '../src/envoy/check-request-reader.js';
import { namesReadBy, viewCheckRequest, type RequestViewOptions } from '../src/envoy/request-view.js';
import { checkEvent, type UndecidedCheckEvent } from '../src/observe/check-event.js';
import { AUTHORIZATION_SERVICE, EncodedCheckResponse, type CheckResponseToSend } from '../src/envoy/proto.js';
import { createDecisionLog } from '../src/observe/decision-log.js';
import { createLogger } from '../src/observe/logger.js';
import { ServiceMetrics } from '../src/observe/metrics.js';
import { authorizeCheck, type CheckAuthority } from '../src/token/authorize-check.js';
import { decisionObserver, type Recorders } from '../src/serve/check-service.js';
import { TokenRefusalRecorder } from '../src/store/token-refusal-recorder.js';
import { AuthUsageRecorder } from '../src/store/auth-usage-recorder.js';
import { DenialStatsRecorder } from '../src/store/denial-stats-recorder.js';
import { LastUsedRecorder } from '../src/store/last-used-recorder.js';
import { IssuerKeys } from '../src/token/issuer-keys.js';
import { TokenVerifier } from '../src/token/token-verifier.js';
import { JwksServer, signedToken, signingKey, tokenClaims, tokenSettings } from '../test/support/jwks-server.js';
import { snapshotOf } from '../test/support/snapshot.js';
import { BENCH_TOKEN_AUDIENCE, BENCH_TOKEN_ISSUER } from './bench-issuer.js';
import { BENCH_CLIENT_IP, encodeCheckRequest, partnerBody, tokenRequestBody } from './check-requests.js';

/**
 * `node --expose-gc dist/bench/check-path.js`: what our own code costs per check, without the transport.
 * The Check handler `serve` registers, with the observers `serve` gives it (metrics, the decision log
 * writing JSON lines to /dev/null at info, the refusal and usage recorders, whose flushes do not fall in
 * the loop), over 10,000 sites, with token-based authentication on as in `make bench`, called in a loop
 * with the CheckRequests the gRPC server would have decoded from Envoy's bytes. This is the part of a check that `make bench`'s saturation rows compare
 * with the no-op: time and V8 heap allocated per check, the collections included; and, for the allow,
 * the same split into the view of the request, the decision and the observers.
 *
 * Each call gets a request of its own, decoded apart from the others (a ring of REQUESTS), as each
 * check in `serve` does: no call finds the strings of the call before with their hashes computed.
 * This is the floor of our part, not its price under load (docs/development.md, "Benchmarks"): interleaved with the
 * transport's work for each stream, the same code takes longer, its caches evicted.
 */
const SITES = 10_000;
/** Separately decoded copies of each request, called in turn. */
const REQUESTS = 1_000;
export const PARTNER = '4242';
const PARTNER_CLIENT = 'partner-1001';

/** 10,000 sites of a key and a token client each, built as the decision tests build theirs (snapshotOf); the partner's allowlists BENCH_CLIENT_IP. */
function snapshotOfSites(partnerKey: string): CredentialSnapshot {
  return snapshotOf(
    Array.from({ length: SITES }, (_, index) => {
      const siteId = String(index + 1);
      const partner = siteId === PARTNER;
      return {
        siteId,
        keys: [{ key: partner ? partnerKey : randomUUID(), keyId: siteId }],
        cidrs: [partner ? `${BENCH_CLIENT_IP}/32` : `10.${(index >> 8) & 255}.${index & 255}.0/24`],
        tokenClients: [partner ? PARTNER_CLIENT : `client-${siteId}`],
      };
    }),
  );
}

const noStatements = { query: () => Promise.resolve() };
/** Calls before measuring: V8 has optimised the code by then. */
const WARM_UP_CALLS = 50_000;

/** Time, collection time and heap bytes freed per call of `step(i)`, for i from 0 to loops - 1. */
function perCall(loops: number, step: (index: number) => unknown): string {
  for (let i = 0; i < WARM_UP_CALLS; i++) step(i);
  globalThis.gc?.();
  const profiler = new GCProfiler();
  profiler.start();
  const started = process.hrtime.bigint();
  for (let i = 0; i < loops; i++) step(i);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const { statistics } = profiler.stop();
  const gcMicros = statistics.reduce((sum, gc) => sum + gc.cost, 0);
  const freed = statistics.reduce((sum, gc) => sum + gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize, 0);
  return `${((seconds / loops) * 1e6).toFixed(2)} µs per check, GC ${(gcMicros / loops).toFixed(2)} µs of it; ~${Math.round(freed / loops)} heap bytes freed per check`;
}
const HOUR_SECONDS = 3600;

/** The verifier of token-based authentication, its issuer on loopback, and one token of the partner's client it has verified once. */
async function keptPartnerToken(logger: ReturnType<typeof createLogger>) {
  const signing = await signingKey('bench');
  const jwks = await JwksServer.start();
  jwks.publish([signing]);
  const issuerKeys = new IssuerKeys({ jwksUrl: jwks.url, logger });
  const close = async () => {
    await issuerKeys.stop();
    await jwks.close();
  };
  try {
    await issuerKeys.start();
    const tokens = new TokenVerifier(tokenSettings(BENCH_TOKEN_ISSUER, BENCH_TOKEN_AUDIENCE, jwks.url), issuerKeys);
    const token = await signedToken(signing, tokenClaims(BENCH_TOKEN_ISSUER, BENCH_TOKEN_AUDIENCE, Math.floor(Date.now() / 1000), { client_id: PARTNER_CLIENT }));
    // Its first sighting, before any loop: from then on it is a kept token, found by its hash, as in serve under load.
    const firstSighting = await tokens.verify(token, Date.now());
    assert.ok('valid' in firstSighting && firstSighting.valid, 'the bench token verified');
    return { tokens, token, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The Check handler's dependencies as `serve` gives them (10,000 sites, token-based authentication on, the
 * metrics, decision log and recorders as observers, writing nowhere), for the partner's key `partnerKey`.
 */
export async function benchCheckDeps(partnerKey: string) {
  const logger = createLogger('info', createWriteStream('/dev/null'));
  const snapshot = snapshotOfSites(partnerKey);
  const sunset = { sunsetAt: Date.parse('2026-12-31T23:59:59Z'), enforce: false, guideUrl: undefined };
  const metrics = new ServiceMetrics({
    siteLabelsMax: 100,
    snapshot: { status: () => ({ ageSeconds: 0, sites: SITES, activeKeys: SITES, listening: true }) },
    apiKeySunsetAt: sunset.sunsetAt,
    pool: { totalCount: 1, idleCount: 1, waitingCount: 0 },
    ready: () => true,
  });
  const recorders: Recorders = {
    lastUsed: new LastUsedRecorder({ pool: noStatements, flushSeconds: HOUR_SECONDS, logger }),
    clientLastUsed: new LastUsedRecorder({ pool: noStatements, of: 'token_clients', flushSeconds: HOUR_SECONDS, logger }),
    refusals: new DenialStatsRecorder({ pool: noStatements, flushSeconds: HOUR_SECONDS, retentionDays: 30, maxGroups: 10_000, logger }),
    usage: new AuthUsageRecorder({ pool: noStatements, flushSeconds: HOUR_SECONDS, retentionDays: 400, logger, maxGroups: 10_000 }),
    tokenRefusals: new TokenRefusalRecorder({ pool: noStatements, flushSeconds: HOUR_SECONDS, retentionDays: 30, maxGroups: 10_000, logger }),
  };
  const decisionLog = createDecisionLog(logger, { allowedSampleRate: 0, repeatWindowSeconds: 10 });
  const { tokens, token, close: closeTokens } = await keptPartnerToken(logger);
  const viewOptions: RequestViewOptions = { clientIpSource: { kind: 'peer' }, maxBodyBytes: 64 * 1024 };
  const authority: CheckAuthority = { snapshot: () => snapshot, sunset, tokens };
  const deps = {
    ...viewOptions,
    logger,
    authorize: (input: CheckInput) => authorizeCheck(input, authority),
    onDecision: decisionObserver(recorders, metrics, decisionLog),
    onFailure: (event: UndecidedCheckEvent) => metrics.checks.observeUndecided(event),
  } satisfies AuthorizationServiceDeps;
  const close = async () => {
    await closeTokens();
    for (const recorder of Object.values(recorders)) await recorder.stop();
    decisionLog.close();
  };
  return { deps, viewOptions, authority, token, close };
}

export async function runCheckPathBench(loops = Number(process.env.CHECK_PATH_LOOPS ?? 300_000)): Promise<string[]> {
  const partnerKey = randomUUID();
  const { deps, viewOptions, authority, token, close } = await benchCheckDeps(partnerKey);
  try {
    let lastVerdict: 'allow' | number | undefined;
    const service = createAuthorizationService({
      ...deps,
      onDecision: (event) => {
        lastVerdict = event.outcome === 'allowed' ? 'allow' : event.errorId;
        deps.onDecision(event);
      },
    });
    const decodedCopies = (authorization: string, body: string) => {
      const bytes = encodeCheckRequest({ authorization, body });
      return Array.from({ length: REQUESTS }, () => AUTHORIZATION_SERVICE.Check.requestDeserialize(bytes));
    };
    const wrongKey = randomUUID();
    const rows = [
      { name: 'allowed (a key)', verdict: 'allow', requests: decodedCopies(`${PARTNER}:${partnerKey}`, partnerBody(PARTNER, partnerKey)) },
      { name: 'a wrong key (102)', verdict: 102, requests: decodedCopies(`${PARTNER}:${wrongKey}`, partnerBody(PARTNER, wrongKey)) },
      { name: 'a kept token (allowed)', verdict: 'allow', requests: decodedCopies(`Bearer ${token}`, tokenRequestBody()) },
    ];
    const lines: string[] = [];
    for (const { name, verdict, requests } of rows) {
      let answered: CheckResponseToSend | undefined;
      const calls = requests.map((request) => ({ request }) as Parameters<typeof service.Check>[0]);
      const callback = (error: unknown, response?: CheckResponseToSend | null) => {
        assert.equal(error, null);
        answered = response ?? undefined;
      };
      lines.push(`${name.padEnd(22)} ${perCall(loops, (i) => service.Check(calls[i % REQUESTS]!, callback))}`);
      assert.ok(answered instanceof EncodedCheckResponse, `${name}: answered from the encoded responses`);
      assert.equal(lastVerdict, verdict, `${name}: decided as expected`);
    }

    const allowed = rows[0]!.requests;
    const views = allowed.map((request) => viewCheckRequest(request, viewOptions));
    const decisions = views.map((view) => authorizeCheck(view.input, authority));
    assert.ok(decisions.every((decision) => decision !== undefined && !(decision instanceof Promise) && 'outcome' in decision && decision.outcome === 'allow'), 'the allow is decided at once');
    lines.push('the allow, step by step (the rest is finding its encoded answer and the call itself):');
    const allowedBytes = encodeCheckRequest({ authorization: `${PARTNER}:${partnerKey}`, body: partnerBody(PARTNER, partnerKey) });
    const readRequest = checkRequestReader(namesReadBy(viewOptions.clientIpSource));
    lines.push(`  ${'reading the request'.padEnd(20)} ${perCall(loops, () => readRequest(allowedBytes))} (what serve's gRPC server does)`);
    lines.push(`  ${'decoding all of it'.padEnd(20)} ${perCall(loops, () => AUTHORIZATION_SERVICE.Check.requestDeserialize(allowedBytes))} (proto-loader, as the no-op's server does)`);
    lines.push(`  ${'view of the request'.padEnd(20)} ${perCall(loops, (i) => viewCheckRequest(allowed[i % REQUESTS], viewOptions))}`);
    lines.push(`  ${'decision'.padEnd(20)} ${perCall(loops, (i) => authorizeCheck(views[i % REQUESTS]!.input, authority))}`);
    lines.push(`  ${'observers'.padEnd(20)} ${perCall(loops, (i) => deps.onDecision(checkEvent(views[i % REQUESTS]!, decisions[i % REQUESTS] as Decision, 0.0001)))}`);
    return lines;
  } finally {
    await close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(`our part of a check, in process (the Check handler and its observers over 10,000 sites, each call on its own decoded request of ${REQUESTS.toLocaleString('en')}; no gRPC, no protobuf decode):`);
  for (const line of await runCheckPathBench()) console.log(`  ${line}`);
}
