import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { guideUrlProblem, parseInstant } from './common/sunset-values.js';

/** Where the client address of a check comes from (docs/configuration.md, "Source IP"). */
export type ClientIpSource =
  | { readonly kind: 'peer' }
  | { readonly kind: 'xff'; readonly trustedHops: number }
  | { readonly kind: 'header'; readonly name: string };

/** What an RFC 9068 JWT access token must satisfy, for partners' tokens and the admin port's alike. */
export interface AccessTokenRules {
  /** The iss every token must carry. */
  readonly issuer: string;
  /** A value every token's aud must contain. */
  readonly audience: string;
  /** The JWS algorithms accepted; asymmetric only. */
  readonly algorithms: readonly string[];
  /** Accepted typ header values, lower case, without the `application/` prefix. */
  readonly types: readonly string[];
  /** Leeway for exp, nbf and iat. */
  readonly clockSkewSeconds: number;
}

/** Token-based authentication (OAuth 2.0 client credentials, RFC 9068 JWT access tokens); off without TOKEN_ISSUER. */
export interface TokenSettings extends AccessTokenRules {
  /** TOKEN_JWKS_URL: where the issuer publishes its signing keys; undefined: named by TOKEN_ISSUER's discovery document. */
  readonly jwksUrl: string | undefined;
  /** TOKEN_MAX_AGE_SECONDS: a token issued (iat) longer ago, or valid (exp - iat) for longer, is refused. */
  readonly maxAgeSeconds: number;
  /**
   * TOKEN_REGISTRATION_TOKEN, or the content of TOKEN_REGISTRATION_TOKEN_FILE: the issuer's initial
   * access token (RFC 7591 §3) for registering partners' clients; unset, `token-client create` is off.
   * Not enumerable, so that no dump of the configuration prints it.
   */
  readonly registrationToken?: string;
}

/**
 * The admin API and console on their own port, for the organisation's people; off without
 * ADMIN_ISSUER. Their tokens follow the partner tokens' rules (the default algorithms, the types of
 * ADMIN_TOKEN_TYPES, 30 s of leeway); the keys come from the issuer's discovery document.
 */
export interface AdminSettings extends AccessTokenRules {
  /** ADMIN_PORT. */
  readonly port: number;
  /** ADMIN_ROLES_CLAIM: the claim that lists a person's roles. */
  readonly rolesClaim: string;
  /** ADMIN_OIDC_CLIENT_ID: unset, no console, the API only. */
  readonly oidcClientId: string | undefined;
  /** ADMIN_OIDC_CLIENT_SECRET: unset, a public client with PKCE. */
  readonly oidcClientSecret: string | undefined;
  /** ADMIN_PUBLIC_URL without a trailing slash; the redirect URI is `${publicUrl}/auth/callback`. */
  readonly publicUrl: string;
}

/** TLS on the gRPC port (docs/deployment.md, "TLS on the Check port"): PEM files, read again when they change. */
export interface GrpcTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** Set: a client certificate issued by this CA is required. */
  readonly clientCaFile: string | undefined;
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  /** Unset: serve and the CLI start an embedded PostgreSQL in dataDir. */
  readonly databaseUrl: string | undefined;
  /** A direct (session) connection for LISTEN; defaults to databaseUrl. */
  readonly databaseListenUrl: string | undefined;
  readonly dataDir: string;
  readonly grpcPort: number;
  /** Unset: the gRPC port speaks plaintext HTTP/2. */
  readonly grpcTls: GrpcTlsFiles | undefined;
  readonly metricsPort: number;
  /** Unset: /healthz and /readyz on METRICS_PORT only. */
  readonly probePort: number | undefined;
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
  /**
   * The API-key sunset: dates in epoch ms, the guide, and whether to enforce it. The sunset date,
   * enforcement and guide live in the database (`sitekey-authz sunset`); these are only the first
   * value written there when it holds none (see check-policies.ts).
   */
  readonly apiKeySunsetAt: number;
  readonly apiKeyDeprecatedAt: number;
  readonly apiKeySunsetEnforce: boolean;
  readonly migrationGuideUrl: string | undefined;
  /** Which of the sunset variables the environment set, so that only those are compared with the database. */
  readonly sunsetVariablesSet: readonly SunsetVariable[];
  /** Remove the Authorization header from allowed requests before they reach the upstream. */
  readonly stripAuthorization: boolean;
  readonly denialStatsRetentionDays: number;
  /** How long the hourly counts of allowed requests by method (auth_usage, `report migration`) are kept. */
  readonly authUsageRetentionDays: number;
  /** How many sites get their own `site` label on the check metrics; the rest count as "other". */
  readonly metricsSiteLabelsMax: number;
  /** The share of allowed checks logged at info, 0..1 (denials are always logged). */
  readonly logAllowedSampleRate: number;
  /** Identical denials within this many seconds: the first logged, the rest counted on one line (0: each logged). */
  readonly logRepeatWindowSeconds: number;
  /** A larger request body is refused (104) unread; match Envoy's with_request_body.max_request_bytes. */
  readonly maxBodyBytes: number;
  /** Connections the gRPC port holds at once; lowered at start-up to fit the open-file limit. */
  readonly grpcMaxConnections: number;
  /** Processes that answer checks on the one gRPC port; 1 runs everything in this process. */
  readonly workers: number;
  /** Undefined: a Bearer header is refused with 106, token-based authentication is not enabled. */
  readonly tokens: TokenSettings | undefined;
  /** Allow every check, reporting each would-be denial as a shadow denial: a first rollout without risk. */
  readonly shadowMode: boolean;
  /** Undefined: no admin port. */
  readonly admin: AdminSettings | undefined;
  /** The CLI: who the audit log names for a change, when --actor does not say (else the OS user). */
  readonly actor: string | undefined;
  /** Kubernetes sets KUBERNETES_SERVICE_HOST in every pod: there the OS user is the image's, nobody's name. */
  readonly inKubernetesPod: boolean;
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

/** One environment variable the service reads: its default and what it sets, in a few words. */
export interface Setting {
  readonly name: string;
  readonly default: string;
  readonly meaning: string;
}

/**
 * Every variable loadConfig reads, in the order the configuration table of docs/configuration.md lists them: what
 * `serve --help` prints, and what a test holds that table and loadConfig to. The rules of each value
 * are in loadConfig's own checks, which say them when a value breaks one.
 */
export const SETTINGS: readonly Setting[] = [
  { name: 'DATABASE_URL', default: 'unset: embedded PostgreSQL in DATA_DIR', meaning: 'postgres:// URL of the credential database' },
  { name: 'DATABASE_LISTEN_URL', default: 'DATABASE_URL', meaning: 'a direct (session) connection for LISTEN, past a transaction-mode pooler' },
  { name: 'DATA_DIR', default: "the repository's .data, else ./.data", meaning: 'where the embedded PostgreSQL keeps its data' },
  { name: 'GRPC_PORT', default: '9001', meaning: 'ext_authz gRPC port (also what `check` calls)' },
  { name: 'GRPC_TLS_CERT_FILE', default: 'unset: plaintext', meaning: 'PEM certificate the gRPC port serves; with the key, TLS only' },
  { name: 'GRPC_TLS_KEY_FILE', default: 'unset', meaning: 'PEM private key of that certificate' },
  { name: 'GRPC_TLS_CLIENT_CA_FILE', default: 'unset', meaning: 'PEM CA: when set, clients must present a certificate it issued' },
  { name: 'METRICS_PORT', default: '9464', meaning: 'HTTP port of /healthz, /readyz and /metrics' },
  { name: 'PROBE_PORT', default: 'unset: probes use METRICS_PORT', meaning: "HTTP port of /healthz and /readyz alone, for kubelet: connections and scrapes on METRICS_PORT never queue ahead of its probes" },
  { name: 'BIND_ADDRESS', default: '127.0.0.1', meaning: 'address both ports listen on (the image and manifests set 0.0.0.0)' },
  { name: 'LOG_LEVEL', default: 'info', meaning: 'fatal, error, warn, info, debug, trace or silent' },
  { name: 'CLIENT_IP_SOURCE', default: 'peer', meaning: 'where the client IP comes from: peer, xff or header:<name>' },
  { name: 'XFF_TRUSTED_HOPS', default: '0', meaning: "with CLIENT_IP_SOURCE=xff: Envoy's xff_num_trusted_hops" },
  { name: 'MIGRATE_ON_START', default: 'true with the embedded database, else false', meaning: 'apply migrations when serve starts' },
  { name: 'SNAPSHOT_REFRESH_SECONDS', default: '60', meaning: 'full reload of the credential snapshot behind LISTEN/NOTIFY' },
  { name: 'SNAPSHOT_MAX_STALENESS_SECONDS', default: '900', meaning: 'older than this, answer UNAVAILABLE (0: no limit)' },
  { name: 'LAST_USED_FLUSH_SECONDS', default: '10', meaning: 'how often key last use and refusal counts are written' },
  { name: 'SHUTDOWN_GRACE_SECONDS', default: '20', meaning: 'on SIGTERM, how long in-flight checks may take' },
  { name: 'SHUTDOWN_DELAY_SECONDS', default: '0', meaning: 'on SIGTERM, answer while NOT_SERVING this long before draining' },
  { name: 'APIKEY_SUNSET_AT', default: '2026-12-31T23:59:59Z', meaning: 'first value of the sunset date; then `sitekey-authz sunset set --at`' },
  { name: 'APIKEY_DEPRECATED_AT', default: 'the sunset', meaning: 'sent as Deprecation, never after the sunset' },
  { name: 'APIKEY_SUNSET_ENFORCE', default: 'false', meaning: 'first value of enforcement; then `sitekey-authz sunset set --enforce`' },
  { name: 'MIGRATION_GUIDE_URL', default: 'unset', meaning: 'first value of the guide (https://); then `sitekey-authz sunset set --guide`' },
  { name: 'STRIP_AUTHORIZATION', default: 'false', meaning: 'allowed requests reach the upstream without Authorization' },
  { name: 'DENIAL_STATS_RETENTION_DAYS', default: '30', meaning: 'how long `report denials` keeps its hourly counts' },
  { name: 'AUTH_USAGE_RETENTION_DAYS', default: '400', meaning: 'how long `report migration` keeps its hourly counts of requests by method' },
  { name: 'METRICS_SITE_LABELS_MAX', default: '1000', meaning: 'sites with a site label of their own on the check metrics' },
  { name: 'LOG_ALLOWED_SAMPLE_RATE', default: '0', meaning: 'share of allowed checks logged at info, 0 to 1' },
  { name: 'LOG_REPEAT_WINDOW_SECONDS', default: '1', meaning: 'a denial repeating one logged this recently is counted, not logged (0: log each)' },
  { name: 'MAX_BODY_BYTES', default: '1048576', meaning: "the largest body checked; match Envoy's max_request_bytes" },
  { name: 'GRPC_MAX_CONNECTIONS', default: '1024', meaning: 'connections the gRPC port holds at once' },
  {
    name: 'TOKEN_ISSUER',
    default: 'unset: a Bearer header gets 106',
    meaning: 'turns token-based authentication on: the iss every access token carries; its discovery document names the JWKS',
  },
  { name: 'TOKEN_AUDIENCE', default: 'required with TOKEN_ISSUER', meaning: "a value every token's aud must contain" },
  {
    name: 'TOKEN_JWKS_URL',
    default: "unset: the jwks_uri of TOKEN_ISSUER's discovery document",
    meaning: "the issuer's jwks_uri (https, or http on loopback), for an issuer without a discovery document",
  },
  { name: 'TOKEN_ALGORITHMS', default: 'RS256,PS256,ES256,EdDSA', meaning: 'JWS algorithms accepted; never none or HMAC' },
  { name: 'TOKEN_TYPES', default: 'at+jwt', meaning: 'typ header values accepted (RFC 9068); none: a token without typ' },
  { name: 'TOKEN_CLOCK_SKEW_SECONDS', default: '30', meaning: 'leeway for exp, nbf and iat' },
  { name: 'TOKEN_MAX_AGE_SECONDS', default: '86400', meaning: 'the oldest token accepted, by iat, and the longest lifetime, exp - iat: beyond it, 106' },
  { name: 'TOKEN_REGISTRATION_TOKEN', default: 'unset: no `token-client create`', meaning: "the issuer's initial access token for registering partners' clients (RFC 7591); also seals their registration access tokens" },
  { name: 'TOKEN_REGISTRATION_TOKEN_FILE', default: 'unset', meaning: 'a file holding TOKEN_REGISTRATION_TOKEN (a mounted Secret), read at start' },
  { name: 'WORKERS', default: '1', meaning: 'processes answering checks on the one port, or auto' },
  { name: 'SHADOW_MODE', default: 'false', meaning: 'allow every check, reporting would-be denials: for a first rollout' },
  { name: 'SITEKEY_ACTOR', default: 'unset: the OS user', meaning: 'CLI: who the audit log names for a change, as `--actor`; needed as root or in a pod' },
  { name: 'KUBERNETES_SERVICE_HOST', default: 'set by Kubernetes in every pod', meaning: 'CLI: when set, a change needs `--actor` or SITEKEY_ACTOR' },
  { name: 'ADMIN_ISSUER', default: 'unset: no admin port', meaning: "turns the admin API and console on: the organisation's OpenID provider (https, or http on loopback)" },
  { name: 'ADMIN_AUDIENCE', default: 'required with ADMIN_ISSUER', meaning: "a value every admin access token's aud must contain" },
  { name: 'ADMIN_PORT', default: '9465', meaning: 'HTTP port of the admin API and console, never routed by the partner gateway' },
  { name: 'ADMIN_TOKEN_TYPES', default: 'at+jwt', meaning: 'typ header values accepted on the admin port: at+jwt, JWT, or none for a token without typ' },
  { name: 'ADMIN_ROLES_CLAIM', default: 'roles', meaning: 'the token claim listing viewer, account-manager or admin; a dotted path such as resource_access.sitekey-authz.roles reads a nested one' },
  { name: 'ADMIN_OIDC_CLIENT_ID', default: 'unset: the API only, no console', meaning: "the console's client id at the provider (authorization code with PKCE)" },
  { name: 'ADMIN_OIDC_CLIENT_SECRET', default: 'unset: a public client', meaning: "the console's client secret, if the provider gave it one" },
  { name: 'ADMIN_PUBLIC_URL', default: 'http://127.0.0.1:<ADMIN_PORT>', meaning: "the console's external base URL; sign-in returns to <it>/auth/callback" },
  // Read by `sitekey-authz issuer` only (src/issuer/issuer-config.ts).
  { name: 'ISSUER_PORT', default: '9470', meaning: 'issuer: HTTP port of the token endpoint, registration, discovery, JWKS and /healthz' },
  { name: 'ISSUER_URL', default: 'http://127.0.0.1:<ISSUER_PORT>, for trying out', meaning: "issuer: its public issuer identifier (https origin, no path), the tokens' iss and serve's TOKEN_ISSUER" },
  { name: 'ISSUER_RESOURCE', default: 'https://partner-api.test on loopback; else required', meaning: "issuer: the one resource tokens are for, their aud: serve's TOKEN_AUDIENCE" },
  { name: 'ISSUER_REGISTRATION_TOKEN', default: 'required, or _FILE; on loopback one is made at the first start, kept in the database and printed then', meaning: 'issuer: the initial access token that client registration (RFC 7591) asks for' },
  { name: 'ISSUER_REGISTRATION_TOKEN_FILE', default: 'unset', meaning: 'issuer: a file holding that token (a mounted Secret), instead of the variable' },
  { name: 'ISSUER_TOKEN_TTL_SECONDS', default: '600', meaning: 'issuer: how long an access token is valid, 60 to 86400' },
];

export const SUNSET_VARIABLES = ['APIKEY_SUNSET_AT', 'APIKEY_SUNSET_ENFORCE', 'MIGRATION_GUIDE_URL', 'APIKEY_DEPRECATED_AT'] as const;
export type SunsetVariable = (typeof SUNSET_VARIABLES)[number];

export type Env = Readonly<Record<string, string | undefined>>;

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
// RFC 9110 token characters; Envoy hands header names to us lower-cased.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

export function text(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
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

export function port(env: Env, name: string, fallback: number): number {
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

const PACKAGE_NAME = 'sitekey-authz';

/**
 * `.data` of the sitekey-authz repository the command runs in, found from a subfolder as git finds
 * its repository (`cd deploy && npx sitekey-authz site list` uses the same database as `make run`),
 * else `.data` in the current directory.
 */
function defaultDataDir(cwd: string): string {
  for (let dir = cwd; ; dir = dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown };
      if (manifest.name === PACKAGE_NAME) return join(dir, '.data');
    } catch {
      // no package.json here, or not ours: look further up
    }
    if (dirname(dir) === dir) return resolve(cwd, '.data');
  }
}

function dataDir(env: Env, cwd: string): string {
  const value = text(env, 'DATA_DIR');
  return value === undefined ? defaultDataDir(cwd) : resolve(cwd, value);
}

const DEFAULT_SUNSET = '2026-12-31T23:59:59Z';

/** A date-time with an explicit zone (a deadline must not depend on the server's time zone), and in the calendar. */
function instant(env: Env, name: string, fallback: string): number {
  const value = text(env, name) ?? fallback;
  const at = parseInstant(value, { dateAlone: false });
  if (at === undefined) {
    throw new ConfigError(name, `expected an ISO 8601 date-time with a zone, on a day the calendar has, such as ${DEFAULT_SUNSET}, got "${value}"`);
  }
  return at;
}

function guideUrl(env: Env, name: string): string | undefined {
  const value = text(env, name);
  const problem = value === undefined ? undefined : guideUrlProblem(value);
  if (problem !== undefined) throw new ConfigError(name, problem);
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

// Asymmetric JWS algorithms only (RFC 7518, RFC 8037): with an HMAC algorithm the issuer's public
// key could serve as the secret, and `none` signs nothing.
const TOKEN_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
const DEFAULT_TOKEN_ALGORITHMS = 'RS256,PS256,ES256,EdDSA';
const LOOPBACK_HOSTS = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

function list(env: Env, name: string, fallback: string): string[] {
  const items = (text(env, name) ?? fallback).split(',').map((item) => item.trim());
  if (items.some((item) => item === '')) throw new ConfigError(name, `expected a comma-separated list such as ${fallback}, got an empty item`);
  return items;
}

function tokenAlgorithms(env: Env): string[] {
  const algorithms = list(env, 'TOKEN_ALGORITHMS', DEFAULT_TOKEN_ALGORITHMS);
  for (const algorithm of algorithms) {
    if (/^(none|HS\d+)$/i.test(algorithm)) {
      throw new ConfigError('TOKEN_ALGORITHMS', `${algorithm} is never accepted: a token must be signed with the issuer's private key; use e.g. ${DEFAULT_TOKEN_ALGORITHMS}`);
    }
    if (!TOKEN_ALGORITHMS.includes(algorithm)) throw new ConfigError('TOKEN_ALGORITHMS', `"${algorithm}" is not one of ${TOKEN_ALGORITHMS.join(', ')}`);
  }
  return algorithms;
}

/** In a list of accepted types: a token without a typ header (a typ that says "none" is no type at all). */
export const NO_TOKEN_TYPE = 'none';

/** A media type as RFC 9068 §4 compares typ: without case and without the `application/` prefix. */
export function normalizedTokenType(type: string): string {
  const lower = type.toLowerCase();
  return lower.startsWith('application/') ? lower.slice('application/'.length) : lower;
}

/**
 * Whether a URL may be fetched for keys or trusted as an issuer: https, or http to a loopback address
 * only. Anything else, a text that is no URL included, is not.
 */
export function isSecureOrLoopbackUrl(value: unknown): boolean {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const parsed = new URL(value);
  return parsed.protocol === 'https:' || (parsed.protocol === 'http:' && LOOPBACK_HOSTS.test(parsed.hostname));
}

/** https, or http to a loopback address only (a local issuer for tests and trying it out). */
function jwksUrl(env: Env, name: string, example = 'https://login.example.com/.well-known/jwks.json'): string | undefined {
  const value = url(env, name, { schemes: ['https:', 'http:'], said: 'an https://', example });
  if (value !== undefined && !isSecureOrLoopbackUrl(value)) {
    throw new ConfigError(name, 'must be https:// (http:// only to a loopback address such as 127.0.0.1, for tests)');
  }
  return value;
}

const RESOURCE_MAX_CHARS = 512;
const RESOURCE_TEXT = new RegExp(`^[\\x21\\x23-\\x5b\\x5d-\\x7e]{1,${RESOURCE_MAX_CHARS}}$`);


/** A day: what issuers hand out as the longest access-token lifetime (ISSUER_TOKEN_TTL_SECONDS stops there too). */
const TOKEN_MAX_AGE_DEFAULT_SECONDS = 86_400;
/** Thirty days: a longer bound is no bound on a leaked token. */
const TOKEN_MAX_AGE_LIMIT_SECONDS = 2_592_000;

function tokenSettings(env: Env): TokenSettings | undefined {
  const issuer = text(env, 'TOKEN_ISSUER');
  if (issuer === undefined) {
    for (const { name } of SETTINGS.filter((setting) => setting.name.startsWith('TOKEN_') && setting.name !== 'TOKEN_ISSUER')) {
      if (text(env, name) !== undefined) throw new ConfigError(name, 'is only read with TOKEN_ISSUER set: set TOKEN_ISSUER to turn token-based authentication on');
    }
    return undefined;
  }
  const audience = text(env, 'TOKEN_AUDIENCE');
  if (audience === undefined) throw new ConfigError('TOKEN_AUDIENCE', 'is required with TOKEN_ISSUER: the audience (aud) tokens for this API carry, e.g. https://partner-api.example.com');
  // Partners are told to request resource=<TOKEN_AUDIENCE>, in the JSON body and in WWW-Authenticate's error_description (RFC 6750 §3).
  if (!RESOURCE_TEXT.test(audience)) {
    throw new ConfigError('TOKEN_AUDIENCE', `must be printable ASCII without spaces, quotes or backslashes, at most ${RESOURCE_MAX_CHARS} characters: the resource URI partners request tokens for, e.g. https://partner-api.example.com`);
  }
  const keys = jwksUrl(env, 'TOKEN_JWKS_URL');
  if (keys === undefined && !isSecureOrLoopbackUrl(issuer)) {
    throw new ConfigError(
      'TOKEN_ISSUER',
      "is not an https:// URL (http:// only to a loopback address), so its discovery document cannot be read for the signing keys: set TOKEN_JWKS_URL to the issuer's jwks_uri",
    );
  }
  const types = list(env, 'TOKEN_TYPES', 'at+jwt').map(normalizedTokenType);
  const settings = {
    issuer,
    audience,
    jwksUrl: keys,
    algorithms: Object.freeze(tokenAlgorithms(env)),
    types: Object.freeze(types),
    clockSkewSeconds: integer(env, 'TOKEN_CLOCK_SKEW_SECONDS', 30, 0, 300),
    maxAgeSeconds: integer(env, 'TOKEN_MAX_AGE_SECONDS', TOKEN_MAX_AGE_DEFAULT_SECONDS, 60, TOKEN_MAX_AGE_LIMIT_SECONDS),
  };
  Object.defineProperty(settings, 'registrationToken', { value: registrationToken(env), enumerable: false });
  return Object.freeze(settings as TokenSettings);
}

// An initial access token is a bearer string (RFC 6750 b64token, as issuers write them); a file's
// trailing newline is not part of it. The token is never quoted back: it would land in a log.
const REGISTRATION_TOKEN = /^[\x21-\x7e]{16,4096}$/;

function registrationToken(env: Env): string | undefined {
  const value = text(env, 'TOKEN_REGISTRATION_TOKEN');
  const file = text(env, 'TOKEN_REGISTRATION_TOKEN_FILE');
  if (value !== undefined && file !== undefined) {
    throw new ConfigError('TOKEN_REGISTRATION_TOKEN_FILE', 'is set together with TOKEN_REGISTRATION_TOKEN: set one of them, the file for a mounted Secret');
  }
  let token = value;
  if (file !== undefined) {
    try {
      token = readFileSync(file, 'utf8').trim();
    } catch (error) {
      throw new ConfigError('TOKEN_REGISTRATION_TOKEN_FILE', `cannot read ${JSON.stringify(file)}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
  }
  if (token !== undefined && !REGISTRATION_TOKEN.test(token)) {
    const from = file === undefined ? 'TOKEN_REGISTRATION_TOKEN' : 'TOKEN_REGISTRATION_TOKEN_FILE';
    throw new ConfigError(from, "expected the issuer's initial access token: 16 to 4096 visible ASCII characters, no spaces");
  }
  return token;
}

const ADMIN_PORT = 9465;
// RFC 9068's type, the plain JWT that Keycloak, Entra ID and Auth0 write by default, or no typ (Okta).
const ADMIN_TOKEN_TYPES = ['at+jwt', 'jwt', NO_TOKEN_TYPE];

function adminTokenTypes(env: Env): string[] {
  const types = list(env, 'ADMIN_TOKEN_TYPES', 'at+jwt');
  for (const type of types) {
    if (!ADMIN_TOKEN_TYPES.includes(normalizedTokenType(type))) {
      throw new ConfigError('ADMIN_TOKEN_TYPES', `"${type}" is not one of at+jwt, JWT or none (a token without typ), e.g. at+jwt,JWT for a provider that writes JWT`);
    }
  }
  return [...new Set(types.map(normalizedTokenType))];
}
// A claim name as providers write them: a word, or a URI such as https://example.com/claims/roles.
const CLAIM_NAME = /^[\x21-\x7e]{1,200}$/;

/** The ADMIN_* names that mean something only with ADMIN_ISSUER. */
function refuseAdminSettingsWithoutIssuer(env: Env): undefined {
  for (const { name } of SETTINGS.filter((setting) => setting.name.startsWith('ADMIN_') && setting.name !== 'ADMIN_ISSUER')) {
    if (text(env, name) !== undefined) throw new ConfigError(name, 'is only read with ADMIN_ISSUER set: set ADMIN_ISSUER to turn the admin API on');
  }
  return undefined;
}

function adminSettings(env: Env, otherPorts: { readonly grpc: number; readonly metrics: number; readonly probes: number | undefined }): AdminSettings | undefined {
  const issuer = jwksUrl(env, 'ADMIN_ISSUER', 'https://login.example.com/realms/staff');
  if (issuer === undefined) return refuseAdminSettingsWithoutIssuer(env);
  const audience = text(env, 'ADMIN_AUDIENCE');
  if (audience === undefined) {
    throw new ConfigError('ADMIN_AUDIENCE', 'is required with ADMIN_ISSUER: the audience (aud) the provider puts in access tokens for this admin API, e.g. https://authz-admin.corp.example');
  }
  const adminPort = port(env, 'ADMIN_PORT', ADMIN_PORT);
  for (const [name, other] of [['GRPC_PORT', otherPorts.grpc], ['METRICS_PORT', otherPorts.metrics], ['PROBE_PORT', otherPorts.probes]] as const) {
    if (adminPort !== 0 && adminPort === other) throw new ConfigError('ADMIN_PORT', `must differ from ${name} (${other}): the admin API is never served on the Check, metrics or probe port`);
  }
  const rolesClaim = text(env, 'ADMIN_ROLES_CLAIM') ?? 'roles';
  if (!CLAIM_NAME.test(rolesClaim)) throw new ConfigError('ADMIN_ROLES_CLAIM', 'expected a claim name or dotted path of at most 200 visible ASCII characters, such as roles or resource_access.sitekey-authz.roles');
  // A path with an empty member could only ever give everyone no role: every admin request a 403.
  if (rolesClaim.split('.').includes('')) throw new ConfigError('ADMIN_ROLES_CLAIM', `"${rolesClaim}" has an empty member between its dots; write the path as resource_access.sitekey-authz.roles`);
  const oidcClientId = text(env, 'ADMIN_OIDC_CLIENT_ID');
  if (oidcClientId !== undefined && !CLAIM_NAME.test(oidcClientId)) {
    throw new ConfigError('ADMIN_OIDC_CLIENT_ID', 'expected the client id the provider gave the console: at most 200 visible ASCII characters, no spaces');
  }
  const oidcClientSecret = text(env, 'ADMIN_OIDC_CLIENT_SECRET');
  // The secret is never quoted back: it would land in a log.
  if (oidcClientSecret !== undefined && oidcClientId === undefined) throw new ConfigError('ADMIN_OIDC_CLIENT_SECRET', 'is only read with ADMIN_OIDC_CLIENT_ID set, the client it belongs to');
  const publicUrl = jwksUrl(env, 'ADMIN_PUBLIC_URL', 'https://authz-admin.corp.example') ?? `http://127.0.0.1:${adminPort}`;
  const parsedPublicUrl = new URL(publicUrl);
  if (parsedPublicUrl.search !== '' || parsedPublicUrl.hash !== '' || parsedPublicUrl.username !== '' || parsedPublicUrl.password !== '') {
    throw new ConfigError('ADMIN_PUBLIC_URL', 'expected a base URL without query, fragment or credentials, such as https://authz-admin.corp.example');
  }
  const types = adminTokenTypes(env);
  // An ID token's aud is the client it was issued to: with the console's client id as the API's
  // audience, and a typ an ID token also carries accepted, a sign-in's ID token would pass as an access token.
  if (oidcClientId === audience && types.some((type) => type !== 'at+jwt')) {
    throw new ConfigError(
      'ADMIN_AUDIENCE',
      "equals ADMIN_OIDC_CLIENT_ID while ADMIN_TOKEN_TYPES accepts more than at+jwt: the console's ID tokens would pass as access tokens; register the API apart from the console at the provider and use its audience",
    );
  }
  return Object.freeze({
    issuer,
    audience,
    algorithms: Object.freeze(DEFAULT_TOKEN_ALGORITHMS.split(',')),
    types: Object.freeze(types),
    clockSkewSeconds: 30,
    port: adminPort,
    rolesClaim,
    oidcClientId,
    oidcClientSecret,
    publicUrl: publicUrl.replace(/\/+$/, ''),
  });
}

/** Turns the environment into a typed, frozen configuration; the only reader of process.env. */
export function loadConfig(env: Env = process.env, cwd: string = process.cwd()): Config {
  const databaseUrl = postgresUrl(env, 'DATABASE_URL');
  const bindAddress = text(env, 'BIND_ADDRESS') ?? '127.0.0.1';
  if (isIP(bindAddress) === 0) throw new ConfigError('BIND_ADDRESS', `expected an IP address such as 0.0.0.0 or ::, got "${bindAddress}"`);
  const logLevel = (text(env, 'LOG_LEVEL') ?? 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel as LogLevel)) {
    throw new ConfigError('LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const grpcPort = port(env, 'GRPC_PORT', 9001);
  const metricsPort = port(env, 'METRICS_PORT', 9464);
  const probePort = text(env, 'PROBE_PORT') === undefined ? undefined : port(env, 'PROBE_PORT', 0);
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
    snapshotRefreshSeconds: integer(env, 'SNAPSHOT_REFRESH_SECONDS', 60, 1, 86_400),
    snapshotMaxStalenessSeconds: integer(env, 'SNAPSHOT_MAX_STALENESS_SECONDS', 900, 0, 31_536_000),
    lastUsedFlushSeconds: integer(env, 'LAST_USED_FLUSH_SECONDS', 10, 1, 3_600),
    shutdownGraceSeconds: integer(env, 'SHUTDOWN_GRACE_SECONDS', 20, 0, 3_600),
    shutdownDelaySeconds: integer(env, 'SHUTDOWN_DELAY_SECONDS', 0, 0, 3_600),
    ...sunsetDates(env),
    apiKeySunsetEnforce: boolean(env, 'APIKEY_SUNSET_ENFORCE', false),
    migrationGuideUrl: guideUrl(env, 'MIGRATION_GUIDE_URL'),
    sunsetVariablesSet: SUNSET_VARIABLES.filter((name) => text(env, name) !== undefined),
    stripAuthorization: boolean(env, 'STRIP_AUTHORIZATION', false),
    denialStatsRetentionDays: integer(env, 'DENIAL_STATS_RETENTION_DAYS', 30, 1, 3_650),
    authUsageRetentionDays: integer(env, 'AUTH_USAGE_RETENTION_DAYS', 400, 1, 3_650),
    metricsSiteLabelsMax: integer(env, 'METRICS_SITE_LABELS_MAX', 1_000, 0, 100_000),
    logAllowedSampleRate: fraction(env, 'LOG_ALLOWED_SAMPLE_RATE', 0),
    logRepeatWindowSeconds: integer(env, 'LOG_REPEAT_WINDOW_SECONDS', 1, 0, 60),
    maxBodyBytes: integer(env, 'MAX_BODY_BYTES', 1_048_576, 1_024, 67_108_864),
    grpcMaxConnections: integer(env, 'GRPC_MAX_CONNECTIONS', 1_024, 1, 1_000_000),
    workers: workers(env),
    tokens: tokenSettings(env),
    shadowMode: boolean(env, 'SHADOW_MODE', false),
    admin: adminSettings(env, { grpc: grpcPort, metrics: metricsPort, probes: probePort }),
    actor: text(env, 'SITEKEY_ACTOR'),
    inKubernetesPod: text(env, 'KUBERNETES_SERVICE_HOST') !== undefined,
  });
}
