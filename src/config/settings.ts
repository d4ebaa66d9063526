/** `default`: as the environment would write it, read when unset; `whenUnset`: what happens where there is no value. */
export type Setting = { readonly name: string; readonly meaning: string } & (
  | { readonly default: string; readonly whenUnset?: never }
  | { readonly default?: never; readonly whenUnset: string }
);

/** ISSUER_RESOURCE when unset on loopback. */
export const TRIAL_RESOURCE = 'https://partner-api.test';

/** Every variable read, in the order of docs/configuration.md's table (a test holds the two equal). */
export const SETTINGS: readonly Setting[] = [
  { name: 'DATABASE_URL', whenUnset: 'unset: embedded PostgreSQL in DATA_DIR', meaning: 'postgres:// URL of the credential database' },
  { name: 'DATABASE_LISTEN_URL', whenUnset: 'DATABASE_URL', meaning: 'a direct (session) connection for LISTEN, past a transaction-mode pooler' },
  { name: 'DATA_DIR', whenUnset: "the repository's .data, else ./.data", meaning: 'where the embedded PostgreSQL keeps its data' },
  { name: 'GRPC_PORT', default: '9001', meaning: 'ext_authz gRPC port (also what `check` calls)' },
  { name: 'GRPC_TLS_CERT_FILE', whenUnset: 'unset: plaintext', meaning: 'PEM certificate the gRPC port serves; with the key, TLS only' },
  { name: 'GRPC_TLS_KEY_FILE', whenUnset: 'unset', meaning: 'PEM private key of that certificate' },
  { name: 'GRPC_TLS_CLIENT_CA_FILE', whenUnset: 'unset', meaning: 'PEM CA: when set, clients must present a certificate it issued' },
  { name: 'METRICS_PORT', default: '9464', meaning: 'HTTP port of /healthz, /readyz and /metrics' },
  { name: 'PROBE_PORT', whenUnset: 'unset: probes use METRICS_PORT', meaning: "HTTP port of /healthz and /readyz alone, for kubelet: connections and scrapes on METRICS_PORT never queue ahead of its probes" },
  { name: 'BIND_ADDRESS', default: '127.0.0.1', meaning: 'address both ports listen on (the image and manifests set 0.0.0.0)' },
  { name: 'LOG_LEVEL', default: 'info', meaning: 'fatal, error, warn, info, debug, trace or silent' },
  { name: 'CLIENT_IP_SOURCE', default: 'peer', meaning: 'where the client IP comes from: peer, xff or header:<name>' },
  { name: 'XFF_TRUSTED_HOPS', default: '0', meaning: "with CLIENT_IP_SOURCE=xff: Envoy's xff_num_trusted_hops" },
  { name: 'MIGRATE_ON_START', whenUnset: 'true with the embedded database, else false', meaning: 'apply migrations when serve starts' },
  { name: 'SNAPSHOT_REFRESH_SECONDS', default: '60', meaning: 'full reload of the credential snapshot behind LISTEN/NOTIFY' },
  { name: 'SNAPSHOT_MAX_STALENESS_SECONDS', default: '900', meaning: 'older than this, answer UNAVAILABLE (0: no limit)' },
  { name: 'LAST_USED_FLUSH_SECONDS', default: '10', meaning: 'how often key last use and refusal counts are written' },
  { name: 'SHUTDOWN_GRACE_SECONDS', default: '20', meaning: 'on SIGTERM, how long in-flight checks may take' },
  { name: 'SHUTDOWN_DELAY_SECONDS', default: '0', meaning: 'on SIGTERM, answer while NOT_SERVING this long before draining' },
  { name: 'APIKEY_SUNSET_AT', default: '2026-12-31T23:59:59Z', meaning: 'first value of the sunset date; then `sitekey-authz sunset set --at`' },
  { name: 'APIKEY_DEPRECATED_AT', whenUnset: 'the sunset', meaning: 'sent as Deprecation, never after the sunset' },
  { name: 'APIKEY_SUNSET_ENFORCE', default: 'false', meaning: 'first value of enforcement; then `sitekey-authz sunset set --enforce`' },
  { name: 'MIGRATION_GUIDE_URL', whenUnset: 'unset', meaning: 'first value of the guide (https://); then `sitekey-authz sunset set --guide`' },
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
    whenUnset: 'unset: a Bearer header gets 106',
    meaning: 'turns token-based authentication on: the iss every access token carries; its discovery document names the JWKS',
  },
  { name: 'TOKEN_AUDIENCE', whenUnset: 'required with TOKEN_ISSUER', meaning: "a value every token's aud must contain" },
  {
    name: 'TOKEN_JWKS_URL',
    whenUnset: "unset: the jwks_uri of TOKEN_ISSUER's discovery document",
    meaning: "the issuer's jwks_uri (https, or http on loopback), for an issuer without a discovery document",
  },
  { name: 'TOKEN_ALGORITHMS', default: 'RS256,PS256,ES256,EdDSA', meaning: 'JWS algorithms accepted; never none or HMAC' },
  { name: 'TOKEN_TYPES', default: 'at+jwt', meaning: 'typ header values accepted (RFC 9068); none: a token without typ' },
  { name: 'TOKEN_CLOCK_SKEW_SECONDS', default: '30', meaning: 'leeway for exp, nbf and iat' },
  // A day: what issuers hand out as the longest access-token lifetime (ISSUER_TOKEN_TTL_SECONDS stops there too).
  { name: 'TOKEN_MAX_AGE_SECONDS', default: '86400', meaning: 'the oldest token accepted, by iat, and the longest lifetime, exp - iat: beyond it, 106' },
  { name: 'TOKEN_REGISTRATION_TOKEN', whenUnset: 'unset: no `token-client create`', meaning: "the issuer's initial access token for registering partners' clients (RFC 7591); also seals their registration access tokens" },
  { name: 'TOKEN_REGISTRATION_TOKEN_FILE', whenUnset: 'unset', meaning: 'a file holding TOKEN_REGISTRATION_TOKEN (a mounted Secret), read at start' },
  { name: 'WORKERS', default: '1', meaning: 'processes answering checks on the one port, or auto' },
  { name: 'SHADOW_MODE', default: 'false', meaning: 'allow every check, reporting would-be denials: for a first rollout' },
  { name: 'SITEKEY_ACTOR', whenUnset: 'unset: the OS user', meaning: 'CLI: who the audit log names for a change, as `--actor`; needed as root or in a pod' },
  { name: 'KUBERNETES_SERVICE_HOST', whenUnset: 'set by Kubernetes in every pod', meaning: 'CLI: when set, a change needs `--actor` or SITEKEY_ACTOR' },
  { name: 'ADMIN_ISSUER', whenUnset: 'unset: no admin port', meaning: "turns the admin API and console on: the organisation's OpenID provider (https, or http on loopback)" },
  { name: 'ADMIN_AUDIENCE', whenUnset: 'required with ADMIN_ISSUER', meaning: "a value every admin access token's aud must contain" },
  { name: 'ADMIN_PORT', default: '9465', meaning: 'HTTP port of the admin API and console, never routed by the partner gateway' },
  { name: 'ADMIN_TOKEN_TYPES', default: 'at+jwt', meaning: 'typ header values accepted on the admin port: at+jwt, JWT, or none for a token without typ' },
  { name: 'ADMIN_TOKEN_MAX_AGE_SECONDS', default: '86400', meaning: 'the oldest admin token accepted, by iat, and the longest lifetime, exp - iat: beyond it, 401' },
  { name: 'ADMIN_ROLES_CLAIM', default: 'roles', meaning: 'the token claim listing viewer, account-manager or admin; a dotted path such as resource_access.sitekey-authz.roles reads a nested one' },
  { name: 'ADMIN_OIDC_CLIENT_ID', whenUnset: 'unset: the API only, no console', meaning: "the console's client id at the provider (authorization code with PKCE)" },
  { name: 'ADMIN_OIDC_CLIENT_SECRET', whenUnset: 'unset: a public client', meaning: "the console's client secret, if the provider gave it one" },
  { name: 'ADMIN_PUBLIC_URL', whenUnset: 'http://127.0.0.1:<ADMIN_PORT>', meaning: "the console's external base URL; sign-in returns to <it>/auth/callback" },
  { name: 'ADMIN_XFF_TRUSTED_HOPS', default: '0', meaning: 'proxies in front of the admin port that append to X-Forwarded-For: its per-address budgets count the client they name' },
  // Read by `sitekey-authz issuer` only (src/issuer/issuer-config.ts).
  { name: 'ISSUER_PORT', default: '9470', meaning: 'issuer: HTTP port of the token endpoint, registration, discovery, JWKS and /healthz' },
  { name: 'ISSUER_URL', whenUnset: 'http://127.0.0.1:<ISSUER_PORT>, for trying out', meaning: "issuer: its public issuer identifier (https origin, no path), the tokens' iss and serve's TOKEN_ISSUER" },
  { name: 'ISSUER_RESOURCE', whenUnset: `${TRIAL_RESOURCE} on loopback; else required`, meaning: "issuer: the one resource tokens are for, their aud: serve's TOKEN_AUDIENCE" },
  { name: 'ISSUER_REGISTRATION_TOKEN', whenUnset: 'required, or _FILE; on loopback one is made at the first start, kept in the database and printed then', meaning: 'issuer: the initial access token that client registration (RFC 7591) asks for' },
  { name: 'ISSUER_REGISTRATION_TOKEN_FILE', whenUnset: 'unset', meaning: 'issuer: a file holding that token (a mounted Secret), instead of the variable' },
  { name: 'ISSUER_TOKEN_TTL_SECONDS', default: '600', meaning: 'issuer: how long an access token is valid, 60 to 86400' },
];

/** What `serve --help` and docs/configuration.md say of a setting's default. */
export const defaultText = (setting: Setting): string => setting.default ?? setting.whenUnset;

/** Read at start-up only; a setting without one is the caller's mistake. */
export function plainDefault(name: string): string {
  const value = SETTINGS.find((setting) => setting.name === name)?.default;
  if (value === undefined) throw new Error(`${name} has no default value in SETTINGS`);
  return value;
}
