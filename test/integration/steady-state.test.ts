import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freshDatabase, testServerUrl, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const CHECKS = 3_000;

/** Issue #4: in steady state a check reads only the in-memory snapshot, never PostgreSQL. */
describe('steady state', () => {
  let database: TestDatabase;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;
  // Statistics are read from another database, so that reading them adds nothing to the count.
  let observer: pg.Client;

  async function transactions(): Promise<number> {
    // Backends report their counters with a delay: PostgreSQL 15+ flushes them at most once a second
    // at a transaction's end, and an idle backend's leftovers only after 10 s (PGSTAT_IDLE_INTERVAL).
    await sleep(11_000);
    await observer.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await observer.query<{ n: string }>(
      'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1',
      [database.name],
    );
    return Number(rows[0]?.n);
  }

  before(async () => {
    database = await freshDatabase();
    observer = new pg.Client({ connectionString: testServerUrl() });
    await observer.connect();
    for (const args of [['site', 'add', '7'], ['ip', 'allow', '7', '0.0.0.0/0']]) assert.equal((await runCli(database.url, args)).code, 0);
    service = await startService({
      DATABASE_URL: database.url,
      MIGRATE_ON_START: 'false',
      LOG_LEVEL: 'warn',
      SNAPSHOT_REFRESH_SECONDS: '3600',
      LAST_USED_FLUSH_SECONDS: '3600',
    });
    client = authorizationClient(service.grpcTarget);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await observer?.end();
    await database?.drop();
  });

  it(`makes zero database statements across ${CHECKS} checks`, async () => {
    const issued = await runCli(database.url, ['key', 'issue', '7', '--json']);
    const { apiKey } = JSON.parse(issued.stdout) as { apiKey: string };
    const args = { authorization: `7:${apiKey}`, body: JSON.stringify({ siteid: 7, apikey: apiKey }) };
    assert.equal(verdict(await check(client, args)), 'allow');
    const before = await transactions();
    let allowed = 0;
    for (let sent = 0; sent < CHECKS; sent += 50) {
      const batch = await Promise.all(Array.from({ length: 50 }, () => check(client, args)));
      allowed += batch.filter((response) => verdict(response) === 'allow').length;
    }
    const afterChecks = await transactions();
    assert.equal(allowed, CHECKS);
    assert.equal(afterChecks - before, 0, `${afterChecks - before} transactions during ${CHECKS} checks`);
  });
});
