import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freshDatabase, testServerUrl, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const CHECKS = 3_000;
/** How long the service's sessions must stand still before the checks start. */
const QUIET_MS = 500;

/** Issue #4: in steady state a check reads only the in-memory snapshot, never PostgreSQL. */
describe('steady state', () => {
  let database: TestDatabase;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;
  // The service's sessions are watched from another database, so that watching adds nothing to them.
  let observer: pg.Client;

  /**
   * The service's own sessions (pool and LISTEN): every statement moves a session's state_change,
   * and a new connection has its own backend_start. Unlike pg_stat_database's counters these are
   * current at once and count neither autovacuum nor other clients of the database.
   */
  async function serviceSessions(): Promise<Array<{ pid: number; backend_start: Date; state_change: Date | null }>> {
    const { rows } = await observer.query<{ pid: number; backend_start: Date; state_change: Date | null }>(
      `SELECT pid, backend_start, state_change FROM pg_stat_activity
        WHERE datname = $1 AND application_name LIKE 'sitekey-authz%' ORDER BY pid`,
      [database.name],
    );
    return rows;
  }

  /** The sessions once two reads QUIET_MS apart agree, at most 30 s from now. */
  async function quietSessions(): Promise<Awaited<ReturnType<typeof serviceSessions>>> {
    const deadline = performance.now() + 30_000;
    let seen = await serviceSessions();
    for (;;) {
      await sleep(QUIET_MS);
      const now = await serviceSessions();
      if (JSON.stringify(now) === JSON.stringify(seen)) return now;
      assert.ok(performance.now() < deadline, 'the service never stopped talking to the database after start-up');
      seen = now;
    }
  }

  before(async () => {
    database = await freshDatabase();
    observer = new pg.Client({ connectionString: testServerUrl() });
    await observer.connect();
    for (const args of [['site', 'add', '7'], ['ip', 'allow', '7', '0.0.0.0/0', '--allow-any-address']]) assert.equal((await runCli(database.url, args)).code, 0);
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
    // The key's reload and anything else of start-up first settle: on a busy machine they may take
    // seconds, so wait until the sessions have stood still for a while, not for a fixed time.
    const before = await quietSessions();
    assert.ok(before.length > 0, 'the service has sessions to watch');
    let allowed = 0;
    for (let sent = 0; sent < CHECKS; sent += 50) {
      const batch = await Promise.all(Array.from({ length: 50 }, () => check(client, args)));
      allowed += batch.filter((response) => verdict(response) === 'allow').length;
    }
    const afterChecks = await serviceSessions();
    assert.equal(allowed, CHECKS);
    // The pool closes a connection idle for 10 s, which a slow (loaded) run reaches: a session that
    // ended ran no statement. A new session, or one whose state changed, did.
    const stillOpen = before.filter((session) => afterChecks.some((after) => after.pid === session.pid));
    assert.ok(stillOpen.length > 0, 'a session to watch stayed open');
    assert.deepEqual(afterChecks, stillOpen, `the service's sessions did something during ${CHECKS} checks`);
  });
});
