import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';

/** Where the client address of a check comes from (README, "Source IP"). */
export type ClientIpSource =
  | { readonly kind: 'peer' }
  | { readonly kind: 'xff'; readonly trustedHops: number }
  | { readonly kind: 'header'; readonly name: string };

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  /** Unset: serve and the CLI start an embedded PostgreSQL in dataDir. */
  readonly databaseUrl: string | undefined;
  /** A direct (session) connection for LISTEN; defaults to databaseUrl. */
  readonly databaseListenUrl: string | undefined;
  readonly dataDir: string;
  readonly grpcPort: number;
  readonly metricsPort: number;
  readonly bindAddress: string;
  readonly logLevel: LogLevel;
  readonly clientIpSource: ClientIpSource;
  readonly migrateOnStart: boolean;
  readonly snapshotRefreshSeconds: number;
  readonly snapshotMaxStalenessSeconds: number;
  readonly lastUsedFlushSeconds: number;
  readonly shutdownGraceSeconds: number;
  /** After SIGTERM, how long to keep answering while reporting NOT_SERVING, before draining. */
  readonly shutdownDelaySeconds: number;
  /** The API-key sunset (issue #11): dates in epoch ms, the guide, and whether to enforce it. */
  readonly apiKeySunsetAt: number;
  readonly apiKeyDeprecatedAt: number;
  readonly apiKeySunsetEnforce: boolean;
  readonly migrationGuideUrl: string | undefined;
  /** Remove the Authorization header from allowed requests before they reach the upstream. */
  readonly stripAuthorization: boolean;
  readonly denialStatsRetentionDays: number;
  /** How many sites get their own `site` label on the check metrics; the rest count as "other". */
  readonly metricsSiteLabelsMax: number;
  /** The share of allowed checks logged at info, 0..1 (denials are always logged). */
  readonly logAllowedSampleRate: number;
  /** A larger request body is refused (104) unread; match Envoy's with_request_body.max_request_bytes. */
  readonly maxBodyBytes: number;
  /** Connections the gRPC port holds at once; lowered at start-up to fit the open-file limit. */
  readonly grpcMaxConnections: number;
  /** Processes that answer checks on the one gRPC port; 1 runs everything in this process. */
  readonly workers: number;
}

/** A configuration value that cannot be used; start-up stops with this message. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`${variable}: ${reason}`);
    this.name = 'ConfigError';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
// RFC 9110 token characters; Envoy hands header names to us lower-cased.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

function text(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = text(env, name);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new ConfigError(name, `expected a whole number from ${min} to ${max}, got "${value}"`);
  const parsed = Number(value);
  if (parsed < min || parsed > max) throw new ConfigError(name, `expected a whole number from ${min} to ${max}, got ${value}`);
  return parsed;
}

/** A share from 0 to 1, written as a decimal (0.01, not 1% or 1e-2). */
function fraction(env: Env, name: string, fallback: number): number {
  const value = text(env, name);
  if (value === undefined) return fallback;
  const parsed = /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
  if (!(parsed >= 0 && parsed <= 1)) throw new ConfigError(name, `expected a decimal from 0 to 1, such as 0.01, got "${value}"`);
  return parsed;
}

function port(env: Env, name: string, fallback: number): number {
  return integer(env, name, fallback, 0, 65535);
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const value = text(env, name)?.toLowerCase();
  if (value === undefined) return fallback;
  if (value === 'true' || value === '1' || value === 'yes') return true;
  if (value === 'false' || value === '0' || value === 'no') return false;
  throw new ConfigError(name, `expected true or false, got "${value}"`);
}

/**
 * A URL of one of `schemes`, e.g. `an https://`. The value is never quoted back: a database URL
 * holds a password.
 */
function url(env: Env, name: string, kind: { readonly schemes: readonly string[]; readonly said: string; readonly example: string }): string | undefined {
  const value = text(env, name);
  if (value === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(name, `expected ${kind.said} URL such as ${kind.example}`);
  }
  if (!kind.schemes.includes(parsed.protocol)) throw new ConfigError(name, `expected ${kind.said} URL, got the scheme "${parsed.protocol}"`);
  return value;
}

function postgresUrl(env: Env, name: string): string | undefined {
  return url(env, name, { schemes: ['postgres:', 'postgresql:'], said: 'a postgres:// or postgresql://', example: 'postgres://user:password@host:5432/database' });
}

function clientIpSource(env: Env): ClientIpSource {
  const value = text(env, 'CLIENT_IP_SOURCE') ?? 'peer';
  if (value !== 'xff' && text(env, 'XFF_TRUSTED_HOPS') !== undefined) {
    throw new ConfigError('XFF_TRUSTED_HOPS', `is only read with CLIENT_IP_SOURCE=xff, not ${value}`);
  }
  if (value === 'peer') return { kind: 'peer' };
  if (value === 'xff') return { kind: 'xff', trustedHops: integer(env, 'XFF_TRUSTED_HOPS', 0, 0, 64) };
  if (value.startsWith('header:')) {
    const name = value.slice('header:'.length).toLowerCase();
    if (!HEADER_NAME.test(name)) {
      throw new ConfigError('CLIENT_IP_SOURCE', `"${name}" is not an HTTP header name; try header:x-envoy-external-address`);
    }
    return { kind: 'header', name };
  }
  throw new ConfigError('CLIENT_IP_SOURCE', `expected peer, xff or header:<name>, got "${value}"`);
}

const WORKERS_MAX = 64;

/**
 * WORKERS: a count, or `auto` for the CPUs this process may run on (os.availableParallelism, which
 * may not see a container's CPU quota: in Kubernetes, give the CPU limit as a number).
 */
function workers(env: Env): number {
  const value = text(env, 'WORKERS');
  if (value?.toLowerCase() === 'auto') return Math.min(availableParallelism(), WORKERS_MAX);
  if (value === undefined) return 1;
  const count = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(count >= 1 && count <= WORKERS_MAX)) throw new ConfigError('WORKERS', `expected auto or a whole number from 1 to ${WORKERS_MAX}, got "${value}"`);
  return count;
}

const DEFAULT_SUNSET = '2026-12-31T23:59:59Z';
// A date-time with an explicit zone: a deadline must not depend on the server's time zone.
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

function instant(env: Env, name: string, fallback: string): number {
  const value = text(env, name) ?? fallback;
  const at = INSTANT.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(at)) throw new ConfigError(name, `expected an ISO 8601 date-time with a zone such as ${DEFAULT_SUNSET}, got "${value}"`);
  return at;
}

function httpsUrl(env: Env, name: string): string | undefined {
  const value = url(env, name, { schemes: ['https:', 'http:'], said: 'an https://', example: 'https://developers.example.com/migrate' });
  // It goes into a Link header between < and >, and into error messages: no room for anything else.
  if (value !== undefined && /[\s<>"]/.test(value)) throw new ConfigError(name, 'must not contain spaces, quotes, < or >');
  return value;
}

function sunsetDates(env: Env): { apiKeySunsetAt: number; apiKeyDeprecatedAt: number } {
  const apiKeySunsetAt = instant(env, 'APIKEY_SUNSET_AT', DEFAULT_SUNSET);
  const apiKeyDeprecatedAt = instant(env, 'APIKEY_DEPRECATED_AT', text(env, 'APIKEY_SUNSET_AT') ?? DEFAULT_SUNSET);
  if (apiKeyDeprecatedAt > apiKeySunsetAt) {
    throw new ConfigError('APIKEY_DEPRECATED_AT', 'must not be later than APIKEY_SUNSET_AT: RFC 9745 does not let the sunset precede the deprecation');
  }
  return { apiKeySunsetAt, apiKeyDeprecatedAt };
}

/** Turns the environment into a typed, frozen configuration; the only reader of process.env. */
export function loadConfig(env: Env = process.env): Config {
  const databaseUrl = postgresUrl(env, 'DATABASE_URL');
  const bindAddress = text(env, 'BIND_ADDRESS') ?? '127.0.0.1';
  if (isIP(bindAddress) === 0) throw new ConfigError('BIND_ADDRESS', `expected an IP address such as 0.0.0.0 or ::, got "${bindAddress}"`);
  const logLevel = (text(env, 'LOG_LEVEL') ?? 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel as LogLevel)) {
    throw new ConfigError('LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  return Object.freeze({
    databaseUrl,
    databaseListenUrl: postgresUrl(env, 'DATABASE_LISTEN_URL') ?? databaseUrl,
    dataDir: resolve(text(env, 'DATA_DIR') ?? '.data'),
    grpcPort: port(env, 'GRPC_PORT', 9001),
    metricsPort: port(env, 'METRICS_PORT', 9464),
    bindAddress,
    logLevel: logLevel as LogLevel,
    clientIpSource: clientIpSource(env),
    migrateOnStart: boolean(env, 'MIGRATE_ON_START', databaseUrl === undefined),
    snapshotRefreshSeconds: integer(env, 'SNAPSHOT_REFRESH_SECONDS', 60, 1, 86_400),
    snapshotMaxStalenessSeconds: integer(env, 'SNAPSHOT_MAX_STALENESS_SECONDS', 900, 0, 31_536_000),
    lastUsedFlushSeconds: integer(env, 'LAST_USED_FLUSH_SECONDS', 10, 1, 3_600),
    shutdownGraceSeconds: integer(env, 'SHUTDOWN_GRACE_SECONDS', 20, 0, 3_600),
    shutdownDelaySeconds: integer(env, 'SHUTDOWN_DELAY_SECONDS', 0, 0, 3_600),
    ...sunsetDates(env),
    apiKeySunsetEnforce: boolean(env, 'APIKEY_SUNSET_ENFORCE', false),
    migrationGuideUrl: httpsUrl(env, 'MIGRATION_GUIDE_URL'),
    stripAuthorization: boolean(env, 'STRIP_AUTHORIZATION', false),
    denialStatsRetentionDays: integer(env, 'DENIAL_STATS_RETENTION_DAYS', 30, 1, 3_650),
    metricsSiteLabelsMax: integer(env, 'METRICS_SITE_LABELS_MAX', 1_000, 0, 100_000),
    logAllowedSampleRate: fraction(env, 'LOG_ALLOWED_SAMPLE_RATE', 0),
    maxBodyBytes: integer(env, 'MAX_BODY_BYTES', 1_048_576, 1_024, 67_108_864),
    grpcMaxConnections: integer(env, 'GRPC_MAX_CONNECTIONS', 1_024, 1, 1_000_000),
    workers: workers(env),
  });
}
