import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';

describe('loadConfig', () => {
  it('has defaults that run the embedded database on the documented ports', () => {
    const config = loadConfig({});
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.grpcPort, 9001);
    assert.equal(config.metricsPort, 9464);
    assert.equal(config.bindAddress, '0.0.0.0');
    assert.equal(config.logLevel, 'info');
    assert.deepEqual(config.clientIpSource, { kind: 'peer' });
    assert.equal(config.migrateOnStart, true, 'migrations run by default with the embedded database');
    assert.equal(config.snapshotRefreshSeconds, 60);
    assert.equal(config.snapshotMaxStalenessSeconds, 900);
    assert.equal(config.lastUsedFlushSeconds, 10);
    assert.equal(config.shutdownGraceSeconds, 20);
    assert.equal(config.shutdownDelaySeconds, 0, 'make run stops at once on Ctrl-C');
    assert.equal(config.maxBodyBytes, 1_048_576, 'Envoy max_request_bytes in the README');
    assert.equal(config.grpcMaxConnections, 1_024);
    assert.ok(Object.isFrozen(config));
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

  it('reads the body and connection limits', () => {
    const config = loadConfig({ MAX_BODY_BYTES: '65536', GRPC_MAX_CONNECTIONS: '64' });
    assert.equal(config.maxBodyBytes, 65_536);
    assert.equal(config.grpcMaxConnections, 64);
  });

  it('reads every client IP source', () => {
    assert.deepEqual(loadConfig({ CLIENT_IP_SOURCE: 'xff' }).clientIpSource, { kind: 'xff', trustedHops: 0 });
    assert.deepEqual(loadConfig({ CLIENT_IP_SOURCE: 'xff', XFF_TRUSTED_HOPS: '2' }).clientIpSource, { kind: 'xff', trustedHops: 2 });
    assert.deepEqual(loadConfig({ CLIENT_IP_SOURCE: 'header:X-Envoy-External-Address' }).clientIpSource, {
      kind: 'header',
      name: 'x-envoy-external-address',
    });
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
    [{ SNAPSHOT_REFRESH_SECONDS: '0' }, 'SNAPSHOT_REFRESH_SECONDS', /from 1/],
    [{ SNAPSHOT_MAX_STALENESS_SECONDS: '1h' }, 'SNAPSHOT_MAX_STALENESS_SECONDS', /whole number/],
    [{ LAST_USED_FLUSH_SECONDS: '0' }, 'LAST_USED_FLUSH_SECONDS', /from 1/],
    [{ SHUTDOWN_GRACE_SECONDS: 'soon' }, 'SHUTDOWN_GRACE_SECONDS', /whole number/],
    [{ SHUTDOWN_DELAY_SECONDS: '5s' }, 'SHUTDOWN_DELAY_SECONDS', /whole number/],
    [{ MAX_BODY_BYTES: '1MiB' }, 'MAX_BODY_BYTES', /whole number/],
    [{ MAX_BODY_BYTES: '0' }, 'MAX_BODY_BYTES', /from 1 to 67108864/],
    [{ MAX_BODY_BYTES: '67108865' }, 'MAX_BODY_BYTES', /67108864/],
    [{ GRPC_MAX_CONNECTIONS: '0' }, 'GRPC_MAX_CONNECTIONS', /from 1 to 1000000/],
    [{ GRPC_MAX_CONNECTIONS: 'many' }, 'GRPC_MAX_CONNECTIONS', /whole number/],
  ];
  for (const [env, variable, reason] of refused) {
    it(`refuses ${JSON.stringify(env)}, naming ${variable} and why`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && error.variable === variable && reason.test(error.message) && error.message.startsWith(`${variable}: `),
      );
    });
  }

  it('never puts a database password in its error messages', () => {
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'mysql://authz:hunter2@db/authz' }),
      (error: unknown) => error instanceof Error && !error.message.includes('hunter2'),
    );
  });
});
