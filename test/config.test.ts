import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, SETTINGS } from '../src/config.js';

describe('loadConfig', () => {
  it("uses the repository's .data from any of its subfolders, else .data where it runs", () => {
    const root = mkdtempSync(join(tmpdir(), 'sitekey-authz-repo-'));
    try {
      writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'sitekey-authz' }));
      mkdirSync(join(root, 'deploy', 'envoy'), { recursive: true });
      assert.equal(loadConfig({}, join(root, 'deploy', 'envoy')).dataDir, join(root, '.data'));
      assert.equal(loadConfig({}, root).dataDir, join(root, '.data'));
      assert.equal(loadConfig({ DATA_DIR: 'here' }, join(root, 'deploy')).dataDir, join(root, 'deploy', 'here'), 'a DATA_DIR given is where it says');
      writeFileSync(join(root, 'deploy', 'package.json'), JSON.stringify({ name: 'another-project' }));
      assert.equal(loadConfig({}, join(root, 'deploy', 'envoy')).dataDir, join(root, '.data'), 'another package on the way is passed');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    const elsewhere = mkdtempSync(join(tmpdir(), 'sitekey-authz-elsewhere-'));
    try {
      assert.equal(loadConfig({}, elsewhere).dataDir, join(elsewhere, '.data'));
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it("reads exactly the variables of the settings schema, but for the issuer's (src/issuer/issuer-config.ts)", () => {
    const read = new Set<string>();
    loadConfig(new Proxy({}, { get: (target, name) => (typeof name === 'string' && read.add(name), undefined) }));
    loadConfig(new Proxy({ CLIENT_IP_SOURCE: 'xff' }, { get: (target: Record<string, string>, name) => (typeof name === 'string' && read.add(name), target[name as string]) }));
    assert.deepEqual([...read].sort(), SETTINGS.map((setting) => setting.name).filter((name) => !name.startsWith('ISSUER_')).sort());
  });

  it('has defaults that run the embedded database on the documented ports', () => {
    const config = loadConfig({});
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.grpcPort, 9001);
    assert.equal(config.metricsPort, 9464);
    assert.equal(config.probePort, undefined, 'probes on METRICS_PORT unless PROBE_PORT is set');
    assert.equal(loadConfig({ PROBE_PORT: '9466' }).probePort, 9466);
    assert.equal(config.bindAddress, '127.0.0.1');
    assert.equal(config.logLevel, 'info');
    assert.deepEqual(config.clientIpSource, { kind: 'peer' });
    assert.equal(config.migrateOnStart, true, 'migrations run by default with the embedded database');
    assert.equal(config.snapshotRefreshSeconds, 60);
    assert.equal(config.snapshotMaxStalenessSeconds, 900);
    assert.equal(config.lastUsedFlushSeconds, 10);
    assert.equal(config.shutdownGraceSeconds, 20);
    assert.equal(config.shutdownDelaySeconds, 0, 'make run stops at once on Ctrl-C');
    assert.equal(config.apiKeySunsetAt, Date.parse('2026-12-31T23:59:59Z'), 'the spec retires API keys by the end of 2026');
    assert.equal(config.apiKeyDeprecatedAt, config.apiKeySunsetAt);
    assert.equal(config.apiKeySunsetEnforce, false, 'enforcement only when asked');
    assert.equal(config.migrationGuideUrl, undefined);
    assert.equal(config.stripAuthorization, false);
    assert.equal(config.denialStatsRetentionDays, 30);
    assert.equal(config.authUsageRetentionDays, 400);
    assert.equal(config.metricsSiteLabelsMax, 1000);
    assert.equal(config.logAllowedSampleRate, 0, 'allowed checks are not logged unless asked');
    assert.equal(config.maxBodyBytes, 1_048_576, "Envoy's max_request_bytes in docs/deployment.md");
    assert.equal(config.grpcMaxConnections, 1_024);
    assert.equal(config.workers, 1, 'one process unless asked');
    assert.equal(config.grpcTls, undefined, 'plaintext unless a certificate is given');
    assert.ok(Object.isFrozen(config));
  });

  it('reads the TLS files of the gRPC port, the client CA optional', () => {
    assert.deepEqual(loadConfig({ GRPC_TLS_CERT_FILE: '/tls/tls.crt', GRPC_TLS_KEY_FILE: '/tls/tls.key' }).grpcTls, {
      certFile: '/tls/tls.crt',
      keyFile: '/tls/tls.key',
      clientCaFile: undefined,
    });
    assert.equal(
      loadConfig({ GRPC_TLS_CERT_FILE: '/tls/tls.crt', GRPC_TLS_KEY_FILE: '/tls/tls.key', GRPC_TLS_CLIENT_CA_FILE: '/tls/ca.crt' }).grpcTls?.clientCaFile,
      '/tls/ca.crt',
    );
  });

  it('does not migrate a named database unless asked', () => {
    const url = 'postgres://authz:secret@db:5432/authz';
    assert.equal(loadConfig({ DATABASE_URL: url }).migrateOnStart, false);
    assert.equal(loadConfig({ DATABASE_URL: url, MIGRATE_ON_START: 'true' }).migrateOnStart, true);
    assert.equal(loadConfig({ DATABASE_URL: url }).databaseListenUrl, url, 'LISTEN uses DATABASE_URL by default');
    assert.equal(
      loadConfig({ DATABASE_URL: url, DATABASE_LISTEN_URL: 'postgresql://authz:secret@db-direct/authz' }).databaseListenUrl,
      'postgresql://authz:secret@db-direct/authz',
    );
  });

  it('reads the sunset settings; the deprecation date follows the sunset unless set', () => {
    const config = loadConfig({ APIKEY_SUNSET_AT: '2027-03-31T00:00:00+02:00', MIGRATION_GUIDE_URL: 'https://developers.example.com/tokens' });
    assert.equal(config.apiKeySunsetAt, Date.parse('2027-03-30T22:00:00Z'));
    assert.equal(config.apiKeyDeprecatedAt, config.apiKeySunsetAt);
    assert.equal(config.migrationGuideUrl, 'https://developers.example.com/tokens');
    const earlier = loadConfig({ APIKEY_DEPRECATED_AT: '2026-06-01T00:00:00Z' });
    assert.equal(earlier.apiKeyDeprecatedAt, Date.parse('2026-06-01T00:00:00Z'));
  });

  it('reads the body and connection limits', () => {
    const config = loadConfig({ MAX_BODY_BYTES: '65536', GRPC_MAX_CONNECTIONS: '64' });
    assert.equal(config.maxBodyBytes, 65_536);
    assert.equal(config.grpcMaxConnections, 64);
  });

  it('reads WORKERS as a count, or auto for the CPUs this process may run on', () => {
    assert.equal(loadConfig({ WORKERS: '2' }).workers, 2);
    assert.equal(loadConfig({ WORKERS: 'AUTO' }).workers, Math.min(availableParallelism(), 64));
    assert.equal(loadConfig({ WORKERS: '64' }).workers, 64);
  });

  it('reads every client IP source', () => {
    assert.deepEqual(loadConfig({ CLIENT_IP_SOURCE: 'xff' }).clientIpSource, { kind: 'xff', trustedHops: 0 });
    assert.deepEqual(loadConfig({ CLIENT_IP_SOURCE: 'xff', XFF_TRUSTED_HOPS: '2' }).clientIpSource, { kind: 'xff', trustedHops: 2 });
    assert.deepEqual(loadConfig({ CLIENT_IP_SOURCE: 'header:X-Envoy-External-Address' }).clientIpSource, {
      kind: 'header',
      name: 'x-envoy-external-address',
    });
  });

  it('reads the site label cap and the share of allowed checks to log', () => {
    assert.equal(loadConfig({ METRICS_SITE_LABELS_MAX: '0' }).metricsSiteLabelsMax, 0);
    assert.equal(loadConfig({ METRICS_SITE_LABELS_MAX: '25000' }).metricsSiteLabelsMax, 25000);
    for (const [text, rate] of [['0', 0], ['1', 1], ['0.01', 0.01], ['1.0', 1], [' 0.5 ', 0.5]] as const) {
      assert.equal(loadConfig({ LOG_ALLOWED_SAMPLE_RATE: text }).logAllowedSampleRate, rate, text);
    }
  });

  it('reads the largest request body to check', () => {
    assert.equal(loadConfig({ MAX_BODY_BYTES: '65536' }).maxBodyBytes, 65_536);
    assert.equal(loadConfig({ MAX_BODY_BYTES: ' 8388608 ' }).maxBodyBytes, 8_388_608);
  });

  const refused: Array<[Record<string, string>, string, RegExp]> = [
    [{ GRPC_PORT: 'http' }, 'GRPC_PORT', /whole number from 0 to 65535/],
    [{ GRPC_PORT: '70000' }, 'GRPC_PORT', /65535/],
    [{ GRPC_PORT: '-1' }, 'GRPC_PORT', /whole number/],
    [{ METRICS_PORT: '9464.5' }, 'METRICS_PORT', /whole number/],
    [{ BIND_ADDRESS: 'localhost' }, 'BIND_ADDRESS', /IP address/],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL', /one of fatal, error, warn, info, debug, trace, silent/],
    [{ DATABASE_URL: 'db:5432' }, 'DATABASE_URL', /postgres/],
    [{ DATABASE_URL: 'mysql://db/authz' }, 'DATABASE_URL', /postgres:\/\//],
    [{ DATABASE_LISTEN_URL: 'not a url' }, 'DATABASE_LISTEN_URL', /URL/],
    [{ CLIENT_IP_SOURCE: 'forwarded' }, 'CLIENT_IP_SOURCE', /peer, xff or header:<name>/],
    [{ CLIENT_IP_SOURCE: 'header:' }, 'CLIENT_IP_SOURCE', /header name/],
    [{ CLIENT_IP_SOURCE: 'header:x forwarded' }, 'CLIENT_IP_SOURCE', /header name/],
    [{ CLIENT_IP_SOURCE: 'xff', XFF_TRUSTED_HOPS: 'two' }, 'XFF_TRUSTED_HOPS', /whole number/],
    [{ XFF_TRUSTED_HOPS: '1' }, 'XFF_TRUSTED_HOPS', /only read with CLIENT_IP_SOURCE=xff, not peer/],
    [{ CLIENT_IP_SOURCE: 'header:x-envoy-external-address', XFF_TRUSTED_HOPS: '1' }, 'XFF_TRUSTED_HOPS', /only read with CLIENT_IP_SOURCE=xff/],
    [{ MIGRATE_ON_START: 'maybe' }, 'MIGRATE_ON_START', /true or false/],
    [{ APIKEY_SUNSET_AT: '2026-12-31' }, 'APIKEY_SUNSET_AT', /date-time with a zone/],
    [{ APIKEY_SUNSET_AT: '2026-12-31T23:59:59' }, 'APIKEY_SUNSET_AT', /date-time with a zone/],
    [{ APIKEY_SUNSET_AT: '2026-13-31T00:00:00Z' }, 'APIKEY_SUNSET_AT', /date-time/],
    [{ APIKEY_DEPRECATED_AT: '2027-01-01T00:00:00Z' }, 'APIKEY_DEPRECATED_AT', /not be later than APIKEY_SUNSET_AT/],
    [{ APIKEY_SUNSET_ENFORCE: 'soon' }, 'APIKEY_SUNSET_ENFORCE', /true or false/],
    [{ STRIP_AUTHORIZATION: 'strip' }, 'STRIP_AUTHORIZATION', /true or false/],
    [{ APIKEY_SUNSET_AT: '2026-02-30T00:00:00Z' }, 'APIKEY_SUNSET_AT', /on a day the calendar has/],
    [{ APIKEY_SUNSET_AT: '2026-12-31T24:00:00Z' }, 'APIKEY_SUNSET_AT', /date-time/],
    [{ MIGRATION_GUIDE_URL: 'docs/migrate' }, 'MIGRATION_GUIDE_URL', /not a URL/],
    [{ MIGRATION_GUIDE_URL: 'ftp://example.com/migrate' }, 'MIGRATION_GUIDE_URL', /must be an https:\/\/ URL, not ftp:/],
    [{ MIGRATION_GUIDE_URL: 'http://example.com/migrate' }, 'MIGRATION_GUIDE_URL', /must be an https:\/\/ URL, not http:/],
    [{ MIGRATION_GUIDE_URL: 'https://example.com/a>b' }, 'MIGRATION_GUIDE_URL', /< or >/],
    [{ MIGRATION_GUIDE_URL: 'https://example.com/\u0001' }, 'MIGRATION_GUIDE_URL', /printable ASCII/],
    [{ MIGRATION_GUIDE_URL: 'https://example.com/über' }, 'MIGRATION_GUIDE_URL', /printable ASCII/],
    [{ DENIAL_STATS_RETENTION_DAYS: '0' }, 'DENIAL_STATS_RETENTION_DAYS', /from 1/],
    [{ AUTH_USAGE_RETENTION_DAYS: '3651' }, 'AUTH_USAGE_RETENTION_DAYS', /to 3650/],
    [{ ADMIN_ISSUER: 'https://login.example.com', ADMIN_AUDIENCE: 'https://authz-admin.example.com', ADMIN_ROLES_CLAIM: 'resource_access..roles' }, 'ADMIN_ROLES_CLAIM', /empty member/],
    [{ SNAPSHOT_REFRESH_SECONDS: '0' }, 'SNAPSHOT_REFRESH_SECONDS', /from 1/],
    [{ SNAPSHOT_MAX_STALENESS_SECONDS: '1h' }, 'SNAPSHOT_MAX_STALENESS_SECONDS', /whole number/],
    [{ LAST_USED_FLUSH_SECONDS: '0' }, 'LAST_USED_FLUSH_SECONDS', /from 1/],
    [{ SHUTDOWN_GRACE_SECONDS: 'soon' }, 'SHUTDOWN_GRACE_SECONDS', /whole number/],
    [{ SHUTDOWN_DELAY_SECONDS: '5s' }, 'SHUTDOWN_DELAY_SECONDS', /whole number/],
    [{ METRICS_SITE_LABELS_MAX: 'all' }, 'METRICS_SITE_LABELS_MAX', /whole number from 0 to 100000/],
    [{ METRICS_SITE_LABELS_MAX: '1000000' }, 'METRICS_SITE_LABELS_MAX', /100000/],
    [{ METRICS_SITE_LABELS_MAX: '-1' }, 'METRICS_SITE_LABELS_MAX', /whole number/],
    [{ LOG_ALLOWED_SAMPLE_RATE: '1.5' }, 'LOG_ALLOWED_SAMPLE_RATE', /decimal from 0 to 1/],
    [{ LOG_ALLOWED_SAMPLE_RATE: '-0.1' }, 'LOG_ALLOWED_SAMPLE_RATE', /decimal from 0 to 1/],
    [{ LOG_ALLOWED_SAMPLE_RATE: '10%' }, 'LOG_ALLOWED_SAMPLE_RATE', /such as 0.01, got "10%"/],
    [{ LOG_ALLOWED_SAMPLE_RATE: '1e-2' }, 'LOG_ALLOWED_SAMPLE_RATE', /decimal/],
    [{ LOG_ALLOWED_SAMPLE_RATE: 'NaN' }, 'LOG_ALLOWED_SAMPLE_RATE', /decimal/],
    [{ LOG_ALLOWED_SAMPLE_RATE: '.5' }, 'LOG_ALLOWED_SAMPLE_RATE', /decimal/],
    [{ MAX_BODY_BYTES: '1MiB' }, 'MAX_BODY_BYTES', /whole number from 1024 to 67108864/],
    [{ MAX_BODY_BYTES: '1e6' }, 'MAX_BODY_BYTES', /whole number/],
    [{ MAX_BODY_BYTES: '-1' }, 'MAX_BODY_BYTES', /whole number/],
    [{ MAX_BODY_BYTES: '0' }, 'MAX_BODY_BYTES', /from 1024/],
    [{ MAX_BODY_BYTES: '67108865' }, 'MAX_BODY_BYTES', /to 67108864/],
    [{ GRPC_MAX_CONNECTIONS: '0' }, 'GRPC_MAX_CONNECTIONS', /from 1 to 1000000/],
    [{ PROBE_PORT: '9464' }, 'PROBE_PORT', /must differ from METRICS_PORT/],
    [{ PROBE_PORT: '9001' }, 'PROBE_PORT', /must differ from GRPC_PORT/],
    [{ PROBE_PORT: 'probes' }, 'PROBE_PORT', /whole number from 0 to 65535/],
    [{ GRPC_MAX_CONNECTIONS: 'many' }, 'GRPC_MAX_CONNECTIONS', /whole number/],
    [{ WORKERS: '0' }, 'WORKERS', /auto or a whole number from 1 to 64/],
    [{ WORKERS: '65' }, 'WORKERS', /from 1 to 64/],
    [{ WORKERS: 'all' }, 'WORKERS', /expected auto or a whole number/],
    [{ WORKERS: '-2' }, 'WORKERS', /expected auto or a whole number/],
    [{ GRPC_TLS_CERT_FILE: '/tls/tls.crt' }, 'GRPC_TLS_KEY_FILE', /must be set with GRPC_TLS_CERT_FILE/],
    [{ GRPC_TLS_KEY_FILE: '/tls/tls.key' }, 'GRPC_TLS_CERT_FILE', /must be set with GRPC_TLS_KEY_FILE/],
    [{ GRPC_TLS_CLIENT_CA_FILE: '/tls/ca.crt' }, 'GRPC_TLS_CLIENT_CA_FILE', /only over TLS/],
  ];
  for (const [env, variable, reason] of refused) {
    it(`refuses ${JSON.stringify(env)}, naming ${variable} and why`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && error.variable === variable && reason.test(error.message) && error.message.startsWith(`${variable}: `),
      );
    });
  }

  const withPassword: Array<[Record<string, string>, string, RegExp]> = [
    [{ DATABASE_URL: 'mysql://authz:hunter2@db/authz' }, 'DATABASE_URL', /^DATABASE_URL: expected a postgres:\/\/ or postgresql:\/\/ URL, got the scheme "mysql:"$/],
    [{ DATABASE_URL: 'authz:hunter2@db:5432' }, 'DATABASE_URL', /^DATABASE_URL: expected a postgres:\/\/ or postgresql:\/\/ URL/],
    [{ DATABASE_URL: 'postgres://authz:hunter2@db [5432]/authz' }, 'DATABASE_URL', /^DATABASE_URL: expected a postgres:\/\/ or postgresql:\/\/ URL such as/],
    [{ DATABASE_LISTEN_URL: 'http://authz:hunter2@db/authz' }, 'DATABASE_LISTEN_URL', /^DATABASE_LISTEN_URL: expected a postgres:\/\/ or postgresql:\/\/ URL, got the scheme "http:"$/],
  ];
  for (const [env, variable, reason] of withPassword) {
    it(`refuses ${Object.keys(env)[0]} of the wrong form naming the variable and why, never quoting the password`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError, `a ConfigError, not ${String(error)}`);
          assert.equal(error.variable, variable);
          assert.match(error.message, reason);
          assert.ok(!error.message.includes('hunter2'), error.message);
          return true;
        },
      );
    });
  }
});

describe('the registration token settings', () => {
  const base = { TOKEN_ISSUER: 'https://login.example.com', TOKEN_AUDIENCE: 'https://partner-api.example.com', TOKEN_JWKS_URL: 'https://login.example.com/jwks' };
  const refused = (env: Record<string, string>, variable: string, reason: RegExp) =>
    assert.throws(() => loadConfig(env), (error: unknown) => error instanceof ConfigError && error.variable === variable && reason.test(error.message));
  const TOKEN = 'initial-access-token-0123456789';

  it('reads the initial access token from the variable or, trimmed, from the file; unset: no registration', () => {
    assert.equal(loadConfig(base).tokens?.registrationToken, undefined);
    assert.equal(loadConfig({ ...base, TOKEN_REGISTRATION_TOKEN: TOKEN }).tokens?.registrationToken, TOKEN);
    const dir = mkdtempSync(join(tmpdir(), 'registration-token-'));
    try {
      const file = join(dir, 'token');
      writeFileSync(file, `${TOKEN}\n`);
      assert.equal(loadConfig({ ...base, TOKEN_REGISTRATION_TOKEN_FILE: file }).tokens?.registrationToken, TOKEN);
      refused({ ...base, TOKEN_REGISTRATION_TOKEN: TOKEN, TOKEN_REGISTRATION_TOKEN_FILE: file }, 'TOKEN_REGISTRATION_TOKEN_FILE', /set one of them/);
      refused({ ...base, TOKEN_REGISTRATION_TOKEN_FILE: join(dir, 'missing') }, 'TOKEN_REGISTRATION_TOKEN_FILE', /cannot read .*ENOENT/);
      writeFileSync(file, 'two words here and more');
      refused({ ...base, TOKEN_REGISTRATION_TOKEN_FILE: file }, 'TOKEN_REGISTRATION_TOKEN_FILE', /visible ASCII characters, no spaces/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is refused without TOKEN_ISSUER, never quoted back, and kept out of a dump of the configuration', () => {
    refused({ TOKEN_REGISTRATION_TOKEN: TOKEN }, 'TOKEN_REGISTRATION_TOKEN', /only read with TOKEN_ISSUER/);
    refused({ ...base, TOKEN_REGISTRATION_TOKEN: 'short' }, 'TOKEN_REGISTRATION_TOKEN', /16 to 4096/);
    assert.throws(() => loadConfig({ ...base, TOKEN_REGISTRATION_TOKEN: 'short' }), (error: Error) => !error.message.includes('short'));
    const config = loadConfig({ ...base, TOKEN_REGISTRATION_TOKEN: TOKEN });
    assert.equal(JSON.stringify(config).includes(TOKEN), false);
  });
});
