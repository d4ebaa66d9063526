import { setTimeout as sleep } from 'node:timers/promises';
import { checkPolicies } from './check-policies.js';
import type { Config } from './config.js';
import { parseClientIp } from './decision/client-ip.js';
import { decide } from './decision/decide.js';
import { startGrpcServer } from './envoy/grpc-server.js';
import type { CheckEvent } from './observe/check-event.js';
import { createDecisionLog } from './observe/decision-log.js';
import { startHttpEndpoints } from './observe/http-endpoints.js';
import { createLogger, type Logger } from './observe/logger.js';
import { ServiceMetrics, type SnapshotGauges } from './observe/metrics.js';
import { CredentialCache, databaseTimeoutMs } from './store/credential-cache.js';
import { connectionPool, openDatabase } from './store/database.js';
import { DenialStatsRecorder } from './store/denial-stats-recorder.js';
import { LastUsedRecorder } from './store/last-used-recorder.js';
import { migrate } from './store/migrate.js';

const READINESS_POLL_MS = 1_000;
/** Distinct (site, error, client address) refusal groups a replica holds between two flushes. */
const DENIAL_GROUPS_MAX = 10_000;

/** The client address a refusal is recorded under. */
function refusedAddress(event: CheckEvent): string {
  return parseClientIp(event.clientIp)?.address ?? 'unknown';
}

/** The credential cache seen through the metrics' narrow interface. */
function cacheGauges(cache: CredentialCache): SnapshotGauges {
  return {
    status(now) {
      const status = cache.status(now);
      return { ageSeconds: status.loaded ? status.staleSeconds : null, sites: status.sites, activeKeys: status.activeKeys, listening: status.listening };
    },
  };
}

/** Resolves on the first SIGTERM or SIGINT: the orchestrator's request to drain and stop. */
function stopRequested(logger: Logger): Promise<string> {
  return new Promise((resolveSignal) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      logger.info({ signal }, 'shutting down: health NOT_SERVING, finishing in-flight checks');
      resolveSignal(signal);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

/**
 * `sitekey-authz serve`: credential snapshot from PostgreSQL, ext_authz over gRPC, operator endpoints
 * over HTTP. Resolves once a SIGTERM or SIGINT has drained and closed everything.
 */
export async function runServer(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<void> {
  const stopping = stopRequested(logger);
  // Whatever was opened is closed in reverse order, after a drain or after a failed start alike.
  const closers: Array<() => Promise<unknown>> = [];
  let shuttingDown = false;
  let readinessTimer: NodeJS.Timeout | undefined;
  try {
    const database = await openDatabase(config, logger);
    closers.push(() => database.close());
    if (config.migrateOnStart) {
      const applied = await migrate(database.url, logger);
      logger.info({ applied }, applied.length ? 'database migrated' : 'database schema is up to date');
    }
    const pool = connectionPool(database.url, {
      applicationName: 'sitekey-authz',
      max: 4,
      logger,
      timeoutMs: databaseTimeoutMs(config.snapshotMaxStalenessSeconds),
    });
    closers.push(() => pool.end());

    const cache = new CredentialCache({
      pool,
      listenUrl: config.databaseListenUrl ?? database.url,
      refreshSeconds: config.snapshotRefreshSeconds,
      maxStalenessSeconds: config.snapshotMaxStalenessSeconds,
      logger,
    });
    closers.push(() => cache.stop());

    const readiness = () => {
      const status = cache.status(Date.now());
      return { ready: status.ready && !shuttingDown, detail: { shuttingDown, snapshot: status } };
    };
    const metrics = new ServiceMetrics({
      siteLabelsMax: config.metricsSiteLabelsMax,
      snapshot: cacheGauges(cache),
      apiKeySunsetAt: config.apiKeySunsetAt,
      pool,
      ready: () => readiness().ready,
    });
    cache.onSync((event) => metrics.onSync({ kind: event.kind, ok: true, durationSeconds: event.durationSeconds }));
    cache.onSyncFailure((event) => metrics.onSync({ kind: event.kind, ok: false, durationSeconds: 0 }));
    cache.onNotificationReceived(() => metrics.onNotification());
    const lastUsed = new LastUsedRecorder({
      pool,
      flushSeconds: config.lastUsedFlushSeconds,
      logger,
      onFlush: (outcome) => metrics.onLastUsedFlush(outcome),
    });
    closers.push(() => lastUsed.stop());
    const refusals = new DenialStatsRecorder({
      pool,
      flushSeconds: config.lastUsedFlushSeconds,
      retentionDays: config.denialStatsRetentionDays,
      maxGroups: DENIAL_GROUPS_MAX,
      logger,
    });
    closers.push(() => refusals.stop());

    const http = await startHttpEndpoints({ bindAddress: config.bindAddress, port: config.metricsPort, readiness, metrics });
    closers.push(() => http.close());
    logger.info({ port: http.port }, 'operator endpoints listening (/healthz, /readyz, /metrics)');

    const logDecision = createDecisionLog(logger, { allowedSampleRate: config.logAllowedSampleRate });
    const { sunset, allowedResponse } = checkPolicies(config);
    const grpc = await startGrpcServer({
      bindAddress: config.bindAddress,
      port: config.grpcPort,
      maxBodyBytes: config.maxBodyBytes,
      maxConnections: config.grpcMaxConnections,
      logger,
      authorization: {
        clientIpSource: config.clientIpSource,
        maxBodyBytes: config.maxBodyBytes,
        logger,
        allowedResponse,
        authorize: (input) => {
          const now = Date.now();
          const snapshot = cache.snapshot(now);
          return snapshot && decide(input, snapshot, now, sunset);
        },
        onDecision: (event) => {
          metrics.observeCheck(event);
          logDecision(event);
          const now = Date.now();
          // Refusals of sites we know, by client address (strangers' 108 and 101 are not counted).
          if (event.outcome === 'allowed') {
            lastUsed.record(event.keyId, now);
            if (event.rehearsalBrownoutId !== undefined) refusals.record(event.siteId, 105, refusedAddress(event), true, now);
          } else if (event.siteKnown && event.siteId !== undefined) {
            refusals.record(event.siteId, event.errorId, refusedAddress(event), false, now);
          }
        },
        onFailure: (event) => metrics.observeUndecided(event),
      },
    });
    closers.push(() => grpc.shutdown(config.shutdownGraceSeconds * 1000));

    // Health follows the snapshot: SERVING once loaded, NOT_SERVING again if it grows too stale.
    let serving = false;
    const followReadiness = () => {
      const { ready, detail } = readiness();
      if (ready === serving) return;
      grpc.setServing((serving = ready));
      if (ready) logger.info(detail, 'ready: credential snapshot loaded, health SERVING');
      else if (!shuttingDown) logger.warn(detail, 'not ready: credential snapshot too stale, health NOT_SERVING, checks answer UNAVAILABLE');
    };
    void cache.start().then(followReadiness, (error: unknown) => logger.error({ err: error }, 'credential snapshot failed to start'));
    readinessTimer = setInterval(followReadiness, READINESS_POLL_MS);

    const signal = await stopping;
    shuttingDown = true;
    followReadiness();
    if (config.shutdownDelaySeconds > 0) {
      // Envoy's health checks and Kubernetes' endpoints take a moment to notice NOT_SERVING;
      // refusing connections before they do would fail partners' requests (status_on_error).
      logger.info({ signal, delaySeconds: config.shutdownDelaySeconds }, 'NOT_SERVING; still answering checks until the delay ends');
      await sleep(config.shutdownDelaySeconds * 1000);
    }
    logger.info({ signal }, 'stopping');
  } finally {
    shuttingDown = true;
    clearInterval(readinessTimer);
    for (const close of closers.reverse()) {
      await close().catch((error: unknown) => logger.warn({ err: error }, 'closing a resource during shutdown failed'));
    }
  }
  logger.info('stopped');
}
