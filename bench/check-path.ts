import assert from 'node:assert/strict';
import { createWriteStream } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { GCProfiler } from 'node:v8';
import type { CheckInput, CredentialSnapshot } from '../src/decision/types.js';
import { createAuthorizationService } from '../src/envoy/authorization-service.js';
import { AUTHORIZATION_SERVICE, EncodedCheckResponse, type CheckResponseToSend } from '../src/envoy/proto.js';
import { createDecisionLog } from '../src/observe/decision-log.js';
import { createLogger } from '../src/observe/logger.js';
import { ServiceMetrics } from '../src/observe/metrics.js';
import { authorizeCheck } from '../src/serve/authorize-check.js';
import { decisionObserver, type Recorders } from '../src/serve/check-service.js';
import { AuthUsageRecorder } from '../src/store/auth-usage-recorder.js';
import { DenialStatsRecorder } from '../src/store/denial-stats-recorder.js';
import { LastUsedRecorder } from '../src/store/last-used-recorder.js';
import { snapshotOf } from '../test/support/snapshot.js';
import { BENCH_CLIENT_IP, encodeCheckRequest, partnerBody } from './check-requests.js';

/**
 * `node --expose-gc dist/bench/check-path.js`: what our own code costs per check, without the transport.
 * The Check handler `serve` registers, with the observers `serve` gives it (metrics, the decision log
 * writing JSON lines to /dev/null at info, the refusal and usage recorders, whose flushes do not fall in
 * the loop), over 10,000 sites, called in a loop with the CheckRequest the gRPC server would have
 * decoded from Envoy's bytes. This is the part of a check that `make bench`'s saturation rows compare
 * with the no-op: time and V8 heap allocated per check, the collections included.
 */
const SITES = 10_000;
const PARTNER = '4242';
const partnerKey = randomUUID();

/** 10,000 sites of a key each, built as the decision tests build theirs (snapshotOf); the partner's allowlists BENCH_CLIENT_IP. */
function snapshotOfSites(): CredentialSnapshot {
  return snapshotOf(
    Array.from({ length: SITES }, (_, index) => {
      const siteId = String(index + 1);
      const partner = siteId === PARTNER;
      return { siteId, keys: [{ key: partner ? partnerKey : randomUUID(), keyId: siteId }], cidrs: [partner ? `${BENCH_CLIENT_IP}/32` : `10.${(index >> 8) & 255}.${index & 255}.0/24`] };
    }),
  );
}

const noStatements = { query: () => Promise.resolve() };
const HOUR_SECONDS = 3600;

export async function runCheckPathBench(loops = Number(process.env.CHECK_PATH_LOOPS ?? 300_000)): Promise<string[]> {
  const logger = createLogger('info', createWriteStream('/dev/null'));
  const snapshot = snapshotOfSites();
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
  };
  const decisionLog = createDecisionLog(logger, { allowedSampleRate: 0, repeatWindowSeconds: 10 });
  const observe = decisionObserver(recorders, metrics, decisionLog);
  let lastVerdict: 'allow' | number | undefined;
  const service = createAuthorizationService({
    clientIpSource: { kind: 'peer' },
    maxBodyBytes: 64 * 1024,
    logger,
    authorize: (input: CheckInput) => authorizeCheck(input, { snapshot: () => snapshot, sunset, tokens: undefined }),
    onDecision: (event) => {
      lastVerdict = event.outcome === 'allowed' ? 'allow' : event.errorId;
      observe(event);
    },
    onFailure: (event) => metrics.observeUndecided(event),
  });
  const decoded = (authorization: string, body: string) => AUTHORIZATION_SERVICE.Check.requestDeserialize(encodeCheckRequest({ authorization, body }));
  const wrongKey = randomUUID();
  const rows = [
    { name: 'allowed (a key)', verdict: 'allow', request: decoded(`${PARTNER}:${partnerKey}`, partnerBody(PARTNER, partnerKey)) },
    { name: 'a wrong key (102)', verdict: 102, request: decoded(`${PARTNER}:${wrongKey}`, partnerBody(PARTNER, wrongKey)) },
  ];
  const lines: string[] = [];
  for (const { name, verdict, request } of rows) {
    let answered: CheckResponseToSend | undefined;
    const call = { request } as Parameters<typeof service.Check>[0];
    const callback = (error: unknown, response?: CheckResponseToSend | null) => {
      assert.equal(error, null);
      answered = response ?? undefined;
    };
    for (let i = 0; i < 50_000; i++) service.Check(call, callback);
    assert.ok(answered instanceof EncodedCheckResponse, `${name}: answered from the encoded responses`);
    assert.equal(lastVerdict, verdict, `${name}: decided as expected`);
    globalThis.gc?.();
    const profiler = new GCProfiler();
    profiler.start();
    const started = process.hrtime.bigint();
    for (let i = 0; i < loops; i++) service.Check(call, callback);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const { statistics } = profiler.stop();
    const gcMicros = statistics.reduce((sum, gc) => sum + gc.cost, 0);
    const freed = statistics.reduce((sum, gc) => sum + gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize, 0);
    lines.push(`${name.padEnd(20)} ${((seconds / loops) * 1e6).toFixed(2)} µs per check, GC ${(gcMicros / loops).toFixed(2)} µs of it; ~${Math.round(freed / loops)} heap bytes freed per check`);
  }
  for (const recorder of Object.values(recorders)) await recorder.stop();
  decisionLog.close();
  return lines;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log('our part of a check, in process (the Check handler and its observers over 10,000 sites; no gRPC, no protobuf decode):');
  for (const line of await runCheckPathBench()) console.log(`  ${line}`);
}
