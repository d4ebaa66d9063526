import { configuredSunsetPolicy } from '../store/sunset-policy.js';
import type { CheckPolicies } from '../envoy/check-policies.js';
import { FollowedCheckPolicies } from './check-policies.js';
import type { Config } from '../config.js';
import { parseClientIp } from '../allowlist/client-ip.js';
import type { Socket } from 'node:net';
import { startGrpcServer, startHandedConnectionsGrpcServer, type GrpcCheckServer, type HandedConnectionsOptions } from '../envoy/grpc-server.js';
import type { CheckEvent, DeniedCheckEvent } from '../observe/check-event.js';
import type { ClientId, SiteId, TokenRule } from '../decision/types.js';
import { createDecisionLog, type DecisionLog } from '../observe/decision-log.js';
import type { Readiness } from '../observe/http-endpoints.js';
import type { Logger } from '../observe/logger.js';
import { ServiceMetrics } from '../observe/metrics.js';
import { CredentialCache, databaseTimeoutMs } from '../store/credential-cache.js';
import { connectionPool } from '../store/database.js';
import { AuthUsageRecorder } from '../store/auth-usage-recorder.js';
import { DenialStatsRecorder, UNKNOWN_SITES, UNKNOWN_SITES_ADDRESS } from '../store/denial-stats-recorder.js';
import { LastUsedRecorder } from '../store/last-used-recorder.js';
import { NO_SITE, TokenRefusalRecorder } from '../store/token-refusal-recorder.js';
import { seedSunsetPolicy } from '../store/sunset-policy.js';
import { IssuerKeys } from '../token/issuer-keys.js';
import { TokenVerifier } from '../token/token-verifier.js';
import { issuerKeysOptions } from '../store/token-key-sets.js';
import { authorizeCheck } from '../token/authorize-check.js';
import { tokenKeysAgeSeconds, tokenKeysReadyWords, tokenKeysStatus } from './token-keys.js';
import { Resources } from './resources.js';

const READINESS_POLL_MS = 1_000;
const DENIAL_GROUPS_MAX = 10_000;

export interface CheckService {
  readonly metrics: ServiceMetrics;
  readiness(): Readiness;
  /** Loads the snapshot; `report` hears the readiness every second and at each change. */
  followSnapshot(report?: (readiness: Readiness) => void): void;
  /** NOT_SERVING; checks are still answered until close(). */
  beginShutdown(): void;
  acceptConnection(socket: Socket): void;
  close(): Promise<void>;
}

interface CheckServiceOptions {
  /** A pool worker's: bind no port, take handed connections, resolve once loaded (else StoppedBeforeLoaded). */
  readonly handedConnectionsOnceLoadedUnless?: Promise<unknown>;
}

export class StoppedBeforeLoaded extends Error {
  constructor() {
    super('stopped before the credential snapshot was loaded');
    this.name = 'StoppedBeforeLoaded';
  }
}

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
  const followed = new FollowedCheckPolicies(config, logger);
  const policies = (): CheckPolicies => followed.of(cache.sunsetPolicy());
  return { pool, cache, policies };
}

function seedSunsetPolicyOnce(config: Config, store: CredentialStore, logger: Logger): void {
  seedSunsetPolicy(store.pool, configuredSunsetPolicy(config)).then(
    (seeded) => {
      if (seeded) logger.info('the database held no sunset policy: seeded it from the environment (APIKEY_SUNSET_AT, APIKEY_SUNSET_ENFORCE, MIGRATION_GUIDE_URL)');
    },
    (error: unknown) =>
      logger.warn({ err: error }, 'could not seed the sunset policy from the environment; the environment applies until `sitekey-authz sunset set` stores one'),
  );
}

type CredentialStore = ReturnType<typeof openCredentialStore>;

function openRecorders(config: Config, store: CredentialStore, metrics: ServiceMetrics, logger: Logger, resources: Resources) {
  const { pool } = store;
  const lastUsed = resources.add(
    new LastUsedRecorder({ pool, flushSeconds: config.lastUsedFlushSeconds, logger, onFlush: (outcome) => metrics.store.onLastUsedFlush(outcome) }),
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
  const usage = resources.add(
    new AuthUsageRecorder({ pool, flushSeconds: config.lastUsedFlushSeconds, retentionDays: config.authUsageRetentionDays, logger, maxGroups: DENIAL_GROUPS_MAX }),
    (recorder) => recorder.stop(),
  );
  const clientLastUsed = resources.add(
    new LastUsedRecorder({ pool, of: 'token_clients', flushSeconds: config.lastUsedFlushSeconds, logger }),
    (recorder) => recorder.stop(),
  );
  const tokenRefusals = resources.add(
    new TokenRefusalRecorder({ pool, flushSeconds: config.lastUsedFlushSeconds, retentionDays: config.denialStatsRetentionDays, maxGroups: DENIAL_GROUPS_MAX, logger }),
    (recorder) => recorder.stop(),
  );
  return { lastUsed, clientLastUsed, refusals, usage, tokenRefusals };
}

function openTokenVerification(config: Config, store: CredentialStore, logger: Logger, resources: Resources) {
  const settings = config.tokens;
  if (settings === undefined) return undefined;
  const keys = resources.add(new IssuerKeys(issuerKeysOptions(settings, store.pool, logger)), (opened) => opened.stop());
  return { keys, verifier: new TokenVerifier(settings, keys) };
}

type TokenVerification = ReturnType<typeof openTokenVerification>;

export type Recorders = ReturnType<typeof openRecorders>;

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
    apiKeySunsetAt: () => store.policies().sunset.sunsetAt,
    pool,
    ready,
  });
  cache.onSync((event) => metrics.store.onSync({ kind: event.kind, ok: true, durationSeconds: event.durationSeconds, sitesRead: event.sitesRead }));
  cache.onSyncFailure((event) => metrics.store.onSync({ kind: event.kind, ok: false, durationSeconds: 0 }));
  cache.onNotificationReceived(() => metrics.store.onNotification());
  cache.onUnusableRowSkipped((row) => metrics.store.onRowSkipped(row.table));
  return metrics;
}

function refusedAddress(event: CheckEvent): string {
  return parseClientIp(event.clientIp)?.address ?? 'unknown';
}

type SiteOfClient = (clientId: ClientId) => SiteId | undefined;

/** An unsigned client id counts only against the site that registered it, never under NO_SITE: no strangers' names. */
function recordRefusedToken(recorders: Recorders, event: DeniedCheckEvent, siteOfClient: SiteOfClient, now: number): void {
  const { claimant, errorId, rule } = event;
  if (claimant === undefined || (errorId !== 106 && errorId !== 107)) return;
  // A revoked token's refusal is counted with its site's other refusals already.
  if (errorId === 106 && event.siteKnown) return;
  const siteId = siteOfClient(claimant.clientId) ?? (claimant.signed ? NO_SITE : undefined);
  if (siteId === undefined) return;
  const tokenRule = errorId === 106 ? (rule as TokenRule) : '';
  recorders.tokenRefusals.record({ siteId, clientId: claimant.clientId, errorId, rule: tokenRule, signed: claimant.signed }, now);
}

export function decisionObserver(recorders: Recorders, metrics: ServiceMetrics, decisionLog: DecisionLog, siteOfClient: SiteOfClient = () => undefined) {
  return (event: CheckEvent): void => {
    metrics.checks.observeCheck(event);
    decisionLog.record(event);
    const now = Date.now();
    // Refusals of sites we know, by client address; strangers' 101 all together, their 108 not at all.
    if (event.outcome === 'allowed') {
      recorders.usage.record(event.siteId, event.authMethod, now);
      if (event.keyId !== undefined) recorders.lastUsed.record(event.keyId, now);
      if (event.clientId !== undefined) recorders.clientLastUsed.record(event.clientId, now);
      if (event.rehearsalBrownoutId !== undefined) recorders.refusals.record(event.siteId, 105, refusedAddress(event), true, now);
    } else if (event.siteKnown && event.siteId !== undefined) {
      recorders.refusals.record(event.siteId, event.errorId, refusedAddress(event), false, now, event.shadow);
    } else if (event.errorId === 101) {
      recorders.refusals.record(UNKNOWN_SITES, 101, UNKNOWN_SITES_ADDRESS, false, now, event.shadow);
    }
    if (event.outcome === 'denied' && event.claimant !== undefined) recordRefusedToken(recorders, event, siteOfClient, now);
  };
}

function startCheckServer(
  config: Config,
  store: CredentialStore,
  tokens: TokenVerification,
  recorders: Recorders,
  metrics: ServiceMetrics,
  decisionLog: DecisionLog,
  logger: Logger,
  handedConnections: boolean,
): Promise<GrpcCheckServer> {
  const options: HandedConnectionsOptions = {
    tls: config.grpcTls,
    maxBodyBytes: config.maxBodyBytes,
    maxConnections: config.grpcMaxConnections,
    logger,
    onIncompleteRequestReset: () => metrics.checks.onIncompleteRequestReset(),
    authorization: {
      clientIpSource: config.clientIpSource,
      maxBodyBytes: config.maxBodyBytes,
      logger,
      allowedResponse: () => store.policies().allowedResponse,
      authorize: (input) => authorizeCheck(input, { snapshot: (now) => store.cache.snapshot(now), sunset: store.policies().sunset, tokens: tokens?.verifier }),
      onDecision: decisionObserver(recorders, metrics, decisionLog, (clientId) => store.cache.snapshot(Date.now())?.siteOfTokenClient(clientId)?.siteId),
      onFailure: (event) => metrics.checks.observeUndecided(event),
      shadowMode: config.shadowMode,
    },
  };
  if (handedConnections) return Promise.resolve(startHandedConnectionsGrpcServer(options));
  return startGrpcServer({ ...options, bindAddress: config.bindAddress, port: config.grpcPort });
}

/** close() shuts in reverse order: the gRPC server drains first, then the recorders flush. */
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
  const tokens = openTokenVerification(config, store, logger, resources);
  let cacheStarted: Promise<void> | undefined;
  const startCache = (): Promise<void> => (cacheStarted ??= store.cache.start());
  let keysStarted: Promise<void> | undefined;
  const startTokenKeys = (): Promise<void> => (keysStarted ??= tokens?.keys.start() ?? Promise.resolve());
  if (options.handedConnectionsOnceLoadedUnless !== undefined) {
    // Everything a check is decided on: the snapshot, and with tokens on the first try for the issuer's keys.
    const loaded = await Promise.race([Promise.all([startCache(), startTokenKeys()]).then(() => true), options.handedConnectionsOnceLoadedUnless.then(() => false)]);
    if (!loaded) throw new StoppedBeforeLoaded();
  }
  let shuttingDown = false;
  const readiness = (): Readiness => {
    const now = Date.now();
    const status = store.cache.status(now);
    // Ready waits for the first try at the issuer's keys, not its success: without keys tokens are refused.
    const tokenKeys = tokens && tokenKeysStatus(tokens.keys, tokens.verifier, now);
    const ready = status.ready && (tokens?.keys.settled ?? true) && !shuttingDown;
    return { ready, detail: { shuttingDown, snapshot: status, ...(tokenKeys && { tokenKeys }) } };
  };
  const metrics = serviceMetrics(config, store, () => readiness().ready);
  if (tokens) {
    metrics.followTokenKeys({ keys: () => tokens.keys.size, ageSeconds: () => tokenKeysAgeSeconds(tokens.keys, Date.now()), verifiedTokens: () => tokens.verifier.size });
    tokens.keys.onFetch((outcome) => metrics.onTokenKeysFetch(outcome));
  }
  const recorders = openRecorders(config, store, metrics, logger, resources);
  // Closed after the gRPC server: the repeats of the last checks are logged.
  const decisionLog = resources.add(
    createDecisionLog(logger, { allowedSampleRate: config.logAllowedSampleRate, repeatWindowSeconds: config.logRepeatWindowSeconds }),
    async (log) => log.close(),
  );
  const handed = options.handedConnectionsOnceLoadedUnless !== undefined;
  const grpc = resources.add(await startCheckServer(config, store, tokens, recorders, metrics, decisionLog, logger, handed), (server) =>
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
    if (current.ready) logger.info(current.detail, `ready: credential snapshot loaded${tokenKeysReadyWords(tokens?.keys)}, health SERVING`);
    else if (!shuttingDown) logger.warn(current.detail, 'not ready: credential snapshot too stale, health NOT_SERVING, checks answer UNAVAILABLE');
  };
  let timer: NodeJS.Timeout | undefined;
  resources.add(undefined, async () => clearInterval(timer));

  return {
    metrics,
    readiness,
    followSnapshot(reportTo) {
      report = reportTo;
      seedSunsetPolicyOnce(config, store, logger);
      void startCache().then(followReadiness, (error: unknown) => logger.error({ err: error }, 'credential snapshot failed to start'));
      void startTokenKeys().then(followReadiness);
      timer = setInterval(followReadiness, READINESS_POLL_MS);
    },
    beginShutdown() {
      shuttingDown = true;
      followReadiness();
    },
    acceptConnection: (socket) => grpc.accept(socket),
    close: () => resources.close(),
  };
}
