import { checkPolicies } from '../check-policies.js';
import type { Config } from '../config.js';
import { parseClientIp } from '../decision/client-ip.js';
import { decide } from '../decision/decide.js';
import { startGrpcServer, type AuthzGrpcServer } from '../envoy/grpc-server.js';
import type { CheckEvent } from '../observe/check-event.js';
import { createDecisionLog } from '../observe/decision-log.js';
import type { Readiness } from '../observe/http-endpoints.js';
import type { Logger } from '../observe/logger.js';
import { ServiceMetrics } from '../observe/metrics.js';
import { CredentialCache, databaseTimeoutMs } from '../store/credential-cache.js';
import { connectionPool } from '../store/database.js';
import { DenialStatsRecorder } from '../store/denial-stats-recorder.js';
import { LastUsedRecorder } from '../store/last-used-recorder.js';
import { Resources } from './resources.js';

const READINESS_POLL_MS = 1_000;
/** Distinct (site, error, client address) refusal groups a process holds between two flushes. */
const DENIAL_GROUPS_MAX = 10_000;

/** What answers checks in one process: credential snapshot, recorders, metrics, gRPC server. */
export interface CheckService {
  readonly metrics: ServiceMetrics;
  readiness(): Readiness;
  /**
   * Loads the snapshot; health and readiness follow it from now on. `report` hears the readiness
   * every second and at each change.
   */
  followSnapshot(report?: (readiness: Readiness) => void): void;
  /** NOT_SERVING for health checks and /readyz; checks are still answered until close(). */
  beginShutdown(): void;
  /** Drains the gRPC server (SHUTDOWN_GRACE_SECONDS), flushes the recorders, stops the cache and the pool; once. */
  close(): Promise<void>;
}

export interface CheckServiceOptions {
  /**
   * A worker's: open the gRPC port only once the snapshot is loaded, so that the cluster hands this
   * process no connection it cannot decide on. startCheckService rejects with StoppedBeforeLoaded if
   * this promise settles first.
   */
  readonly listenOnceLoadedUnless?: Promise<unknown>;
}

/** A worker asked to stop while it was still loading its first snapshot. */
export class StoppedBeforeLoaded extends Error {
  constructor() {
    super('stopped before the credential snapshot was loaded');
    this.name = 'StoppedBeforeLoaded';
  }
}

/** The pool's connections and the credential snapshot they keep current. */
function openCredentialStore(config: Config, databaseUrl: string, logger: Logger, resources: Resources) {
  const pool = resources.add(
    connectionPool(databaseUrl, {
      applicationName: 'sitekey-authz',
      max: 4,
      logger,
      timeoutMs: databaseTimeoutMs(config.snapshotMaxStalenessSeconds),
    }),
    (opened) => opened.end(),
  );
  const cache = resources.add(
    new CredentialCache({
      pool,
      listenUrl: config.databaseListenUrl ?? databaseUrl,
      refreshSeconds: config.snapshotRefreshSeconds,
      maxStalenessSeconds: config.snapshotMaxStalenessSeconds,
      logger,
    }),
    (opened) => opened.stop(),
  );
  return { pool, cache };
}

type CredentialStore = ReturnType<typeof openCredentialStore>;

/** The writes that checks cause, batched off the request path: last use of keys, refusal counts. */
function openRecorders(config: Config, store: CredentialStore, metrics: ServiceMetrics, logger: Logger, resources: Resources) {
  const { pool } = store;
  const lastUsed = resources.add(
    new LastUsedRecorder({ pool, flushSeconds: config.lastUsedFlushSeconds, logger, onFlush: (outcome) => metrics.onLastUsedFlush(outcome) }),
    (recorder) => recorder.stop(),
  );
  const refusals = resources.add(
    new DenialStatsRecorder({
      pool,
      flushSeconds: config.lastUsedFlushSeconds,
      retentionDays: config.denialStatsRetentionDays,
      maxGroups: DENIAL_GROUPS_MAX,
      logger,
    }),
    (recorder) => recorder.stop(),
  );
  return { lastUsed, refusals };
}

type Recorders = ReturnType<typeof openRecorders>;

function serviceMetrics(config: Config, store: CredentialStore, ready: () => boolean): ServiceMetrics {
  const { cache, pool } = store;
  const metrics = new ServiceMetrics({
    siteLabelsMax: config.metricsSiteLabelsMax,
    snapshot: {
      status(now) {
        const status = cache.status(now);
        return { ageSeconds: status.loaded ? status.staleSeconds : null, sites: status.sites, activeKeys: status.activeKeys, listening: status.listening };
      },
    },
    apiKeySunsetAt: config.apiKeySunsetAt,
    pool,
    ready,
  });
  cache.onSync((event) => metrics.onSync({ kind: event.kind, ok: true, durationSeconds: event.durationSeconds }));
  cache.onSyncFailure((event) => metrics.onSync({ kind: event.kind, ok: false, durationSeconds: 0 }));
  cache.onNotificationReceived(() => metrics.onNotification());
  return metrics;
}

/** The client address a refusal is recorded under. */
function refusedAddress(event: CheckEvent): string {
  return parseClientIp(event.clientIp)?.address ?? 'unknown';
}

/** What a decided check leaves behind besides its answer: metrics, a log line, last use, refusal counts. */
function decisionObserver(config: Config, recorders: Recorders, metrics: ServiceMetrics, logger: Logger) {
  const logDecision = createDecisionLog(logger, { allowedSampleRate: config.logAllowedSampleRate });
  return (event: CheckEvent): void => {
    metrics.observeCheck(event);
    logDecision(event);
    const now = Date.now();
    // Refusals of sites we know, by client address (strangers' 108 and 101 are not counted).
    if (event.outcome === 'allowed') {
      recorders.lastUsed.record(event.keyId, now);
      if (event.rehearsalBrownoutId !== undefined) recorders.refusals.record(event.siteId, 105, refusedAddress(event), true, now);
    } else if (event.siteKnown && event.siteId !== undefined) {
      recorders.refusals.record(event.siteId, event.errorId, refusedAddress(event), false, now);
    }
  };
}

function startCheckServer(config: Config, store: CredentialStore, recorders: Recorders, metrics: ServiceMetrics, logger: Logger): Promise<AuthzGrpcServer> {
  const { sunset, allowedResponse } = checkPolicies(config);
  return startGrpcServer({
    bindAddress: config.bindAddress,
    port: config.grpcPort,
    maxBodyBytes: config.maxBodyBytes,
    maxConnections: config.grpcMaxConnections,
    logger,
    onIncompleteRequestReset: () => metrics.onIncompleteRequestReset(),
    authorization: {
      clientIpSource: config.clientIpSource,
      maxBodyBytes: config.maxBodyBytes,
      logger,
      allowedResponse,
      authorize: (input) => {
        const now = Date.now();
        const snapshot = store.cache.snapshot(now);
        return snapshot && decide(input, snapshot, now, sunset);
      },
      onDecision: decisionObserver(config, recorders, metrics, logger),
      onFailure: (event) => metrics.observeUndecided(event),
    },
  });
}

/**
 * Opens everything that answers checks, in order; close() shuts it in reverse: the gRPC server first
 * (draining within SHUTDOWN_GRACE_SECONDS), then the recorders' last flush, the cache and the pool.
 */
export async function startCheckService(config: Config, databaseUrl: string, logger: Logger, options: CheckServiceOptions = {}): Promise<CheckService> {
  const resources = new Resources(logger);
  try {
    return await openCheckService(config, databaseUrl, logger, resources, options);
  } catch (error) {
    await resources.close();
    throw error;
  }
}

async function openCheckService(config: Config, databaseUrl: string, logger: Logger, resources: Resources, options: CheckServiceOptions): Promise<CheckService> {
  const store = openCredentialStore(config, databaseUrl, logger, resources);
  let cacheStarted: Promise<void> | undefined;
  const startCache = (): Promise<void> => (cacheStarted ??= store.cache.start());
  if (options.listenOnceLoadedUnless !== undefined) {
    const loaded = await Promise.race([startCache().then(() => true), options.listenOnceLoadedUnless.then(() => false)]);
    if (!loaded) throw new StoppedBeforeLoaded();
  }
  let shuttingDown = false;
  const readiness = (): Readiness => {
    const status = store.cache.status(Date.now());
    return { ready: status.ready && !shuttingDown, detail: { shuttingDown, snapshot: status } };
  };
  const metrics = serviceMetrics(config, store, () => readiness().ready);
  const recorders = openRecorders(config, store, metrics, logger, resources);
  const grpc = resources.add(await startCheckServer(config, store, recorders, metrics, logger), (server) =>
    server.shutdown(config.shutdownGraceSeconds * 1000),
  );

  let serving = false;
  let report: ((readiness: Readiness) => void) | undefined;
  // Health follows the snapshot: SERVING once loaded, NOT_SERVING again if it grows too stale.
  const followReadiness = (): void => {
    const current = readiness();
    report?.(current);
    if (current.ready === serving) return;
    grpc.setServing((serving = current.ready));
    if (current.ready) logger.info(current.detail, 'ready: credential snapshot loaded, health SERVING');
    else if (!shuttingDown) logger.warn(current.detail, 'not ready: credential snapshot too stale, health NOT_SERVING, checks answer UNAVAILABLE');
  };
  let timer: NodeJS.Timeout | undefined;
  resources.add(undefined, async () => clearInterval(timer));

  return {
    metrics,
    readiness,
    followSnapshot(reportTo) {
      report = reportTo;
      void startCache().then(followReadiness, (error: unknown) => logger.error({ err: error }, 'credential snapshot failed to start'));
      timer = setInterval(followReadiness, READINESS_POLL_MS);
    },
    beginShutdown() {
      shuttingDown = true;
      followReadiness();
    },
    close: () => resources.close(),
  };
}
