import pg from 'pg';
import type { Config } from './config.js';
import { decide } from './decision/decide.js';
import { startGrpcServer } from './envoy/grpc-server.js';
import { createDecisionLog } from './observe/decision-log.js';
import { startHttpEndpoints } from './observe/http-endpoints.js';
import { createLogger, type Logger } from './observe/logger.js';
import { CredentialCache } from './store/credential-cache.js';
import { openDatabase } from './store/database.js';
import { LastUsedRecorder } from './store/last-used-recorder.js';
import { migrate } from './store/migrate.js';

const READINESS_POLL_MS = 1_000;

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
  const database = await openDatabase(config, logger);
  if (config.migrateOnStart) {
    const applied = await migrate(database.url, logger);
    logger.info({ applied }, applied.length ? 'database migrated' : 'database schema is up to date');
  }
  const pool = new pg.Pool({ connectionString: database.url, max: 4, application_name: 'sitekey-authz' });
  pool.on('error', (error) => logger.warn({ err: error }, 'idle PostgreSQL connection failed'));

  const cache = new CredentialCache({
    pool,
    listenUrl: config.databaseListenUrl ?? database.url,
    refreshSeconds: config.snapshotRefreshSeconds,
    maxStalenessSeconds: config.snapshotMaxStalenessSeconds,
    logger,
  });
  const lastUsed = new LastUsedRecorder({ pool, flushSeconds: config.lastUsedFlushSeconds, logger });
  const logDecision = createDecisionLog(logger);
  let shuttingDown = false;

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
        logDecision(event);
        if (event.decision.outcome === 'allow') lastUsed.record(event.decision.keyId, Date.now());
      },
    },
  });
  const readiness = () => {
    const status = cache.status(Date.now());
    return { ready: status.ready && !shuttingDown, detail: { shuttingDown, snapshot: status } };
  };
  const http = await startHttpEndpoints({ bindAddress: config.bindAddress, port: config.metricsPort, readiness });
  logger.info({ port: http.port }, 'operator endpoints listening (/healthz, /readyz)');

  // Health follows the snapshot: SERVING once loaded, NOT_SERVING again if it grows too stale.
  let serving = false;
  const followReadiness = () => {
    const ready = readiness().ready;
    if (ready !== serving) grpc.setServing((serving = ready));
  };
  void cache.start().then(followReadiness, (error: unknown) => logger.error({ err: error }, 'credential snapshot failed to start'));
  const readinessTimer = setInterval(followReadiness, READINESS_POLL_MS);

  const signal = await stopping;
  shuttingDown = true;
  clearInterval(readinessTimer);
  await grpc.shutdown(config.shutdownGraceSeconds * 1000);
  await lastUsed.stop();
  await cache.stop();
  await http.close();
  await pool.end();
  await database.close();
  logger.info({ signal }, 'stopped');
}
