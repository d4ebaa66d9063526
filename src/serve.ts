import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { Config } from './config.js';
import { decide } from './decision/decide.js';
import { startGrpcServer } from './envoy/grpc-server.js';
import { createDecisionLog } from './observe/decision-log.js';
import { startHttpEndpoints } from './observe/http-endpoints.js';
import { createLogger, type Logger } from './observe/logger.js';
import { ServiceMetrics, type SnapshotGauges } from './observe/metrics.js';
import { CredentialCache } from './store/credential-cache.js';
import { connectionPool, openDatabase } from './store/database.js';
import { LastUsedRecorder } from './store/last-used-recorder.js';
import { migrate } from './store/migrate.js';

const READINESS_POLL_MS = 1_000;
// The snapshot loader's criterion (not revoked), less the keys whose expiry has passed. pg reads
// query_timeout from a query's config too, though its types name it on the client's only.
const COUNT_ACTIVE_KEYS: pg.QueryConfig & { readonly query_timeout: number } = {
  text: `SELECT count(*)::int AS n FROM api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
  query_timeout: 5_000,
};

/**
 * Today's CredentialCache seen through the metrics' narrow interface. The cache does not count its
 * keys, so they are counted in the database after each successful sync (one query at a time).
 */
function credentialCacheGauges(cache: CredentialCache, pool: pg.Pool, logger: Logger): SnapshotGauges {
  let activeKeys = 0;
  let counting: Promise<void> | undefined;
  let countAgain = false;
  const count = async (): Promise<void> => {
    do {
      countAgain = false;
      try {
        const { rows } = await pool.query<{ n: number }>(COUNT_ACTIVE_KEYS);
        activeKeys = rows[0]?.n ?? activeKeys;
      } catch (error) {
        logger.debug({ err: error }, 'counting active keys for the metrics failed');
      }
    } while (countAgain);
  };
  cache.onSync(() => {
    if (counting !== undefined) countAgain = true;
    else counting = count().finally(() => (counting = undefined));
  });
  return {
    status(now) {
      const status = cache.status(now);
      return {
        ageSeconds: status.lastSyncAt === null ? null : Math.max(0, (now - Date.parse(status.lastSyncAt)) / 1000),
        sites: status.sites,
        activeKeys,
        listening: status.listening,
      };
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
    const pool = connectionPool(database.url, { applicationName: 'sitekey-authz', max: 4, logger });
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
      snapshot: credentialCacheGauges(cache, pool, logger),
      pool,
      ready: () => readiness().ready,
    });
    // Today's cache reports successful syncs only; failures and notifications are not observable yet.
    cache.onSync((event) => metrics.onSync({ kind: event.kind, ok: true, durationSeconds: event.durationSeconds }));
    const lastUsed = new LastUsedRecorder({
      pool,
      flushSeconds: config.lastUsedFlushSeconds,
      logger,
      onFlush: (outcome) => metrics.onLastUsedFlush(outcome),
    });
    closers.push(() => lastUsed.stop());

    const http = await startHttpEndpoints({ bindAddress: config.bindAddress, port: config.metricsPort, readiness, metrics });
    closers.push(() => http.close());
    logger.info({ port: http.port }, 'operator endpoints listening (/healthz, /readyz, /metrics)');

    const logDecision = createDecisionLog(logger, { allowedSampleRate: config.logAllowedSampleRate });
    const grpc = await startGrpcServer({
      bindAddress: config.bindAddress,
      port: config.grpcPort,
      logger,
      authorization: {
        clientIpSource: config.clientIpSource,
        logger,
        authorize: (input) => {
          const now = Date.now();
          const snapshot = cache.snapshot(now);
          return snapshot && decide(input, snapshot, now);
        },
        onDecision: (event) => {
          metrics.observeCheck(event);
          logDecision(event);
          if (event.outcome === 'allowed') lastUsed.record(event.keyId, Date.now());
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
