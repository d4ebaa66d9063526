import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { adminSettings } from './config/admin-settings.js';
import { boolean, ConfigError, fraction, integer, port, postgresUrl, text, textOrDefault, type Env } from './config/env-values.js';
import { guideUrl, SUNSET_VARIABLES, sunsetDates, type SunsetVariable } from './config/sunset-settings.js';
import { tokenSettings } from './config/token-settings.js';
import { findUp } from './paths.js';

export type { AdminSettings } from './config/admin-settings.js';
export { ConfigError, integer, port, text, type Env } from './config/env-values.js';
export { defaultText, SETTINGS, type Setting } from './config/settings.js';
export type { SunsetVariable } from './config/sunset-settings.js';
export { isSecureOrLoopbackUrl, NO_TOKEN_TYPE, normalizedTokenType, type AccessTokenRules, type TokenSettings } from './config/token-settings.js';

/** Where the client address of a check comes from (docs/configuration.md, "Source IP"). */
export type ClientIpSource =
  | { readonly kind: 'peer' }
  | { readonly kind: 'xff'; readonly trustedHops: number }
  | { readonly kind: 'header'; readonly name: string };

/** PEM files, read again when they change (docs/deployment.md, "TLS on the Check port"). */
export interface GrpcTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** Set: a client certificate issued by this CA is required. */
  readonly clientCaFile: string | undefined;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
// RFC 9110 token characters; Envoy hands header names to us lower-cased.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

function clientIpSource(env: Env): ClientIpSource {
  const value = textOrDefault(env, 'CLIENT_IP_SOURCE');
  if (value !== 'xff' && text(env, 'XFF_TRUSTED_HOPS') !== undefined) {
    throw new ConfigError('XFF_TRUSTED_HOPS', `is only read with CLIENT_IP_SOURCE=xff, not ${value}`);
  }
  if (value === 'peer') return { kind: 'peer' };
  if (value === 'xff') return { kind: 'xff', trustedHops: integer(env, 'XFF_TRUSTED_HOPS', 0, 64) };
  if (value.startsWith('header:')) {
    const name = value.slice('header:'.length).toLowerCase();
    if (!HEADER_NAME.test(name)) {
      throw new ConfigError('CLIENT_IP_SOURCE', `"${name}" is not an HTTP header name; try header:x-envoy-external-address`);
    }
    return { kind: 'header', name };
  }
  throw new ConfigError('CLIENT_IP_SOURCE', `expected peer, xff or header:<name>, got "${value}"`);
}

function grpcTls(env: Env): GrpcTlsFiles | undefined {
  const certFile = text(env, 'GRPC_TLS_CERT_FILE');
  const keyFile = text(env, 'GRPC_TLS_KEY_FILE');
  const clientCaFile = text(env, 'GRPC_TLS_CLIENT_CA_FILE');
  if (certFile === undefined && keyFile === undefined) {
    if (clientCaFile !== undefined) throw new ConfigError('GRPC_TLS_CLIENT_CA_FILE', 'a client certificate is asked for only over TLS: set GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE too');
    return undefined;
  }
  if (certFile === undefined) throw new ConfigError('GRPC_TLS_CERT_FILE', 'must be set with GRPC_TLS_KEY_FILE: the PEM certificate (chain) the gRPC port serves');
  if (keyFile === undefined) throw new ConfigError('GRPC_TLS_KEY_FILE', 'must be set with GRPC_TLS_CERT_FILE: the PEM private key of that certificate');
  return { certFile: resolve(certFile), keyFile: resolve(keyFile), clientCaFile: clientCaFile === undefined ? undefined : resolve(clientCaFile) };
}

const WORKERS_MAX = 64;

/** `auto`: os.availableParallelism, which may not see a container's CPU quota (in Kubernetes give a number). */
function workers(env: Env): number {
  const value = textOrDefault(env, 'WORKERS');
  if (value.toLowerCase() === 'auto') return Math.min(availableParallelism(), WORKERS_MAX);
  const count = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(count >= 1 && count <= WORKERS_MAX)) throw new ConfigError('WORKERS', `expected auto or a whole number from 1 to ${WORKERS_MAX}, got "${value}"`);
  return count;
}

const PACKAGE_NAME = 'sitekey-authz';

/** DATA_DIR, else `.data` of the repository the command runs in, found from a subfolder as git finds its own, else ./.data. */
function dataDir(env: Env, cwd: string): string {
  const value = text(env, 'DATA_DIR');
  if (value !== undefined) return resolve(cwd, value);
  const ours = findUp(cwd, (dir) => {
    try {
      return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown }).name === PACKAGE_NAME;
    } catch {
      return false; // no package.json here: look further up
    }
  });
  return ours === undefined ? resolve(cwd, '.data') : join(ours, '.data');
}


/** What each setting means: the table in config/settings.ts. */
export type Config = ReturnType<typeof loadConfig>;

/** The only reader of process.env. */
export function loadConfig(env: Env = process.env, cwd: string = process.cwd()) {
  const databaseUrl = postgresUrl(env, 'DATABASE_URL');
  const bindAddress = textOrDefault(env, 'BIND_ADDRESS');
  if (isIP(bindAddress) === 0) throw new ConfigError('BIND_ADDRESS', `expected an IP address such as 0.0.0.0 or ::, got "${bindAddress}"`);
  const logLevel = textOrDefault(env, 'LOG_LEVEL').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel as LogLevel)) {
    throw new ConfigError('LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const grpcPort = port(env, 'GRPC_PORT');
  const metricsPort = port(env, 'METRICS_PORT');
  const probePort = text(env, 'PROBE_PORT') === undefined ? undefined : port(env, 'PROBE_PORT');
  for (const [name, other] of [['GRPC_PORT', grpcPort], ['METRICS_PORT', metricsPort]] as const) {
    if (probePort !== undefined && probePort !== 0 && probePort === other) throw new ConfigError('PROBE_PORT', `must differ from ${name} (${other}): probes have a port of their own so that nothing else queues ahead of them`);
  }
  return Object.freeze({
    databaseUrl,
    databaseListenUrl: postgresUrl(env, 'DATABASE_LISTEN_URL') ?? databaseUrl,
    dataDir: dataDir(env, cwd),
    grpcPort,
    grpcTls: grpcTls(env),
    metricsPort,
    probePort,
    bindAddress,
    logLevel: logLevel as LogLevel,
    clientIpSource: clientIpSource(env),
    migrateOnStart: boolean(env, 'MIGRATE_ON_START', databaseUrl === undefined),
    snapshotRefreshSeconds: integer(env, 'SNAPSHOT_REFRESH_SECONDS', 1, 86_400),
    snapshotMaxStalenessSeconds: integer(env, 'SNAPSHOT_MAX_STALENESS_SECONDS', 0, 31_536_000),
    lastUsedFlushSeconds: integer(env, 'LAST_USED_FLUSH_SECONDS', 1, 3_600),
    shutdownGraceSeconds: integer(env, 'SHUTDOWN_GRACE_SECONDS', 0, 3_600),
    shutdownDelaySeconds: integer(env, 'SHUTDOWN_DELAY_SECONDS', 0, 3_600),
    // The sunset's settings only seed the database, which holds the policy (see serve/check-policies.ts).
    ...sunsetDates(env),
    apiKeySunsetEnforce: boolean(env, 'APIKEY_SUNSET_ENFORCE'),
    migrationGuideUrl: guideUrl(env, 'MIGRATION_GUIDE_URL'),
    sunsetVariablesSet: SUNSET_VARIABLES.filter((name) => text(env, name) !== undefined) as readonly SunsetVariable[],
    stripAuthorization: boolean(env, 'STRIP_AUTHORIZATION'),
    denialStatsRetentionDays: integer(env, 'DENIAL_STATS_RETENTION_DAYS', 1, 3_650),
    authUsageRetentionDays: integer(env, 'AUTH_USAGE_RETENTION_DAYS', 1, 3_650),
    metricsSiteLabelsMax: integer(env, 'METRICS_SITE_LABELS_MAX', 0, 100_000),
    logAllowedSampleRate: fraction(env, 'LOG_ALLOWED_SAMPLE_RATE'),
    logRepeatWindowSeconds: integer(env, 'LOG_REPEAT_WINDOW_SECONDS', 0, 60),
    maxBodyBytes: integer(env, 'MAX_BODY_BYTES', 1_024, 67_108_864),
    grpcMaxConnections: integer(env, 'GRPC_MAX_CONNECTIONS', 1, 1_000_000),
    workers: workers(env),
    tokens: tokenSettings(env),
    shadowMode: boolean(env, 'SHADOW_MODE'),
    admin: adminSettings(env, { grpc: grpcPort, metrics: metricsPort, probes: probePort }),
    actor: text(env, 'SITEKEY_ACTOR'),
    // Set in every pod: there the OS user is the image's, nobody's name.
    inKubernetesPod: text(env, 'KUBERNETES_SERVICE_HOST') !== undefined,
  });
}
