import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { hashApiKey } from '../../../src/decision/api-key.js';
import type { CredentialSnapshot } from '../../../src/decision/types.js';
import { createLogger } from '../../../src/observe/logger.js';
import { CredentialCache, LISTEN_APPLICATION_NAME, NOTIFIED_FULL_LOAD_INTERVAL_MS } from '../../../src/store/credential-cache.js';
import { insertSite } from '../../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { eventually } from '../../support/eventually.js';
import { loggedLines } from '../../support/logged-lines.js';

const KEY = '11111111-1111-4111-8111-111111111111';
const NEW_KEY = '22222222-2222-4222-8222-222222222222';
const RESYNC_KEY = '33333333-3333-4333-8333-333333333333';
const BOUND_MS = 1_000;
/** A token client's cut-off set by hand: a whole second in the past. */
const CLIENT_CUT_OFF = Date.parse('2026-01-02T03:04:05Z');

const hasKey = (snapshot: CredentialSnapshot | undefined, site: string, key: string) =>
  snapshot?.site(site)?.keysByHash.get(hashApiKey(key)) !== undefined;

/** Two caches on one database stand for two replicas; every change must reach both. */
describe('credential cache', () => {
  let database: TestDatabase;
  let sql: pg.Client;
  const pools: pg.Pool[] = [];
  const caches: CredentialCache[] = [];

  function newCache(refreshSeconds = 3_600, PoolClass: typeof pg.Pool = pg.Pool, options: { maxStalenessSeconds?: number; listenUrl?: string } = {}): CredentialCache {
    const pool = new PoolClass({ connectionString: database.url, max: 2 });
    pools.push(pool);
    const cache = new CredentialCache({
      pool,
      listenUrl: options.listenUrl ?? database.url,
      refreshSeconds,
      maxStalenessSeconds: options.maxStalenessSeconds ?? 900,
      logger: createLogger('silent'),
    });
    caches.push(cache);
    return cache;
  }

  /** Milliseconds from the change until `holds` is true of every cache. */
  async function timeUntil(targets: CredentialCache[], holds: (s: CredentialSnapshot | undefined) => boolean, change: () => Promise<unknown>) {
    const started = performance.now();
    await change();
    while (!targets.every((cache) => holds(cache.snapshot(Date.now())))) {
      if (performance.now() - started > 10_000) assert.fail('the change never arrived');
      await sleep(5);
    }
    return performance.now() - started;
  }

  before(async () => {
    database = await freshDatabase();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    await insertSite(sql, { id: '1001', keys: [{ key: KEY }], cidrs: ['203.0.113.0/24'] });
  });

  after(async () => {
    await Promise.all(caches.map((cache) => cache.stop()));
    await Promise.all(pools.map((pool) => pool.end()));
    await sql?.end();
    await database?.drop();
  });

  it('is not ready before its first load, and ready after', async () => {
    const cache = newCache();
    assert.equal(cache.snapshot(Date.now()), undefined);
    assert.equal(cache.status(Date.now()).ready, false);
    await cache.start();
    assert.equal(cache.status(Date.now()).ready, true);
    assert.equal(hasKey(cache.snapshot(Date.now()), '1001', KEY), true);
  });

  it('propagates plain-SQL changes to two caches within one second', async () => {
    const replicas = [newCache(), newCache()];
    await Promise.all(replicas.map((cache) => cache.start()));
    const changes: Array<[string, (s: CredentialSnapshot | undefined) => boolean, () => Promise<unknown>]> = [
      ['new key', (s) => hasKey(s, '1001', NEW_KEY), () => insertKey('1001', NEW_KEY)],
      ['revocation', (s) => !hasKey(s, '1001', NEW_KEY), () => sql.query("UPDATE api_keys SET revoked_at = now() WHERE last_five = $1", [NEW_KEY.slice(-5)])],
      ['disable', (s) => s?.site('1001')?.enabled === false, () => sql.query('UPDATE sites SET enabled = false WHERE id = 1001')],
      ['enable', (s) => s?.site('1001')?.enabled === true, () => sql.query('UPDATE sites SET enabled = true WHERE id = 1001')],
      ['allowlist entry', (s) => s?.site('1001')?.allowlist.check('192.0.2.9', 'ipv4') === true, () => sql.query("INSERT INTO allowlist_entries VALUES (1001, '192.0.2.0/24')")],
      ['allowlist removal', (s) => s?.site('1001')?.allowlist.check('192.0.2.9', 'ipv4') === false, () => sql.query("DELETE FROM allowlist_entries WHERE cidr = '192.0.2.0/24'")],
      ['new site', (s) => s?.site('2002') !== undefined, () => insertSite(sql, { id: '2002' })],
      ['token client', (s) => s?.siteOfTokenClient('moved-app')?.siteId === '1001', () => sql.query("INSERT INTO token_clients (client_id, site_id) VALUES ('moved-app', 1001)")],
      [
        "a token client's cut-off",
        (s) => s?.site('1001')?.tokenClients.get('moved-app') === CLIENT_CUT_OFF,
        () => sql.query('UPDATE token_clients SET tokens_not_before = to_timestamp($1) WHERE client_id = $2', [CLIENT_CUT_OFF / 1000, 'moved-app']),
      ],
      [
        'a token client moved to another site, registered anew there',
        (s) => s?.siteOfTokenClient('moved-app')?.siteId === '2002' && (s.site('2002')?.tokenClients.get('moved-app') ?? 0) > CLIENT_CUT_OFF,
        () => sql.query("UPDATE token_clients SET site_id = 2002 WHERE client_id = 'moved-app'"),
      ],
      ['token client removed', (s) => s?.siteOfTokenClient('moved-app') === undefined, () => sql.query("DELETE FROM token_clients WHERE client_id = 'moved-app'")],
      ['deleted site', (s) => s?.site('2002') === undefined, () => sql.query('DELETE FROM sites WHERE id = 2002')],
    ];
    for (const [name, holds, change] of changes) {
      const elapsed = await timeUntil(replicas, holds, change);
      assert.ok(elapsed < BOUND_MS, `${name} took ${Math.round(elapsed)} ms`);
    }
  });

  it('resyncs fully after its LISTEN connection is killed, picking up what changed meanwhile', async () => {
    const cache = newCache();
    await cache.start();
    // Killing the backend and changing credentials at once: the notification goes to nobody.
    await sql.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`,
      [LISTEN_APPLICATION_NAME],
    );
    await sql.query('UPDATE sites SET enabled = false WHERE id = 1001');
    const elapsed = await timeUntil([cache], (s) => s?.site('1001')?.enabled === false, async () => {});
    assert.ok(elapsed < 5_000, `the resync took ${Math.round(elapsed)} ms`);
    assert.equal(cache.status(Date.now()).listening, true);
    await sql.query('UPDATE sites SET enabled = true WHERE id = 1001');
  });

  it('says its LISTEN connection was lost even while the failures of its loads are being logged', async () => {
    const { lines, logger } = loggedLines('warn');
    const messages = () => lines.map((line) => String(line.msg));
    // Loads go to a port nobody listens on and fail; the LISTEN session reaches the database.
    const pool = new pg.Pool({ connectionString: 'postgresql://nobody@127.0.0.1:1/none', max: 1 });
    pools.push(pool);
    const cache = new CredentialCache({ pool, listenUrl: database.url, refreshSeconds: 3_600, maxStalenessSeconds: 900, logger });
    caches.push(cache);
    void cache.start();
    await eventually('a failed load logged, and the LISTEN session up', async () => ({ messages: messages(), listening: cache.status(Date.now()).listening }),
      (seen) => seen.listening && seen.messages.some((message) => message.startsWith('loading the credential snapshot failed')), 10_000);
    await sql.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`,
      [LISTEN_APPLICATION_NAME],
    );
    // Within the outage lines' interval (10 s): the loss has a line of its own, not one the load failures took.
    await eventually('the loss of the LISTEN connection logged', async () => messages(), (seen) => seen.some((message) => message.startsWith('LISTEN connection lost')), 5_000);
  });

  it('picks up a change that sent no notification at the next periodic resync', async () => {
    const cache = newCache(1);
    await cache.start();
    // With session_replication_role = replica, ordinary triggers do not fire: no NOTIFY.
    await sql.query('BEGIN');
    await sql.query('SET LOCAL session_replication_role = replica');
    await sql.query("INSERT INTO allowlist_entries VALUES (1001, '198.51.100.0/24')");
    await sql.query('COMMIT');
    await sleep(300);
    assert.equal(cache.snapshot(Date.now())?.site('1001')?.allowlist.check('198.51.100.1', 'ipv4'), false, 'a notification arrived');
    await timeUntil([cache], (s) => s?.site('1001')?.allowlist.check('198.51.100.1', 'ipv4') === true, async () => {});
  });

  it('resyncs by reading again only the sites whose data changed: the others keep their objects, and the snapshot age restarts', async () => {
    await insertSite(sql, { id: '3001', keys: [{ key: RESYNC_KEY }], cidrs: ['192.0.2.0/24'] });
    await insertSite(sql, { id: '3002', cidrs: ['192.0.2.0/24'] });
    const cache = newCache(1);
    let fullLoads = 0;
    cache.onSync((event) => (fullLoads += event.kind === 'full' ? 1 : 0));
    await cache.start();
    const before = cache.snapshot(Date.now());
    const [unchanged, changing] = [before?.site('1001'), before?.site('3001')];
    const syncedBefore = cache.status(Date.now()).lastSyncAt;
    // Changes that send no notification (ordinary triggers do not fire with this role): only the resync can see them.
    await sql.query('BEGIN');
    await sql.query('SET LOCAL session_replication_role = replica');
    await sql.query('UPDATE api_keys SET revoked_at = now() WHERE site_id = 3001');
    await sql.query('DELETE FROM allowlist_entries WHERE site_id = 3002');
    await sql.query('DELETE FROM sites WHERE id = 3002');
    await sql.query('COMMIT');
    await timeUntil([cache], (s) => s?.site('3002') === undefined && !hasKey(s, '3001', RESYNC_KEY), async () => {});
    const after = cache.snapshot(Date.now());
    assert.ok(fullLoads >= 2, 'a periodic resync ran');
    assert.equal(after?.site('1001'), unchanged, 'an unchanged site was rebuilt');
    assert.notEqual(after?.site('3001'), changing);
    assert.equal(after?.site('3001')?.keysByHash.size, 0);
    assert.equal(cache.status(Date.now()).activeKeys, 1, 'the key count follows the sites a resync changed');
    assert.ok((cache.status(Date.now()).lastSyncAt ?? '') > (syncedBefore ?? ''), 'the snapshot age restarts with each resync');
    await sql.query('DELETE FROM api_keys WHERE site_id = 3001');
    await sql.query('DELETE FROM allowlist_entries WHERE site_id = 3001');
    await sql.query('DELETE FROM sites WHERE id = 3001');
  });

  it('keeps propagating changes after notifications that name no site', async () => {
    const cache = newCache();
    await cache.start();
    for (const junk of ['junk', '', '01001', '-1', '9223372036854775808']) await sql.query("SELECT pg_notify('sitekey_credentials', $1)", [junk]);
    const elapsed = await timeUntil([cache], (s) => s?.site('1001')?.enabled === false, () => sql.query('UPDATE sites SET enabled = false WHERE id = 1001'));
    assert.ok(elapsed < BOUND_MS, `the change after junk notifications took ${Math.round(elapsed)} ms`);
    await timeUntil([cache], (s) => s?.site('1001')?.enabled === true, () => sql.query('UPDATE sites SET enabled = true WHERE id = 1001'));
  });

  it('merges a burst of full-resync requests instead of queueing one load each', async () => {
    // Each load waits 200 ms for its connection, as a full load of 100,000 sites takes seconds:
    // requests then arrive while one load runs, which is when they must merge.
    class SlowPool extends pg.Pool {
      override connect(): Promise<pg.PoolClient>;
      override connect(callback: Parameters<pg.Pool['connect']>[0]): void;
      override connect(callback?: Parameters<pg.Pool['connect']>[0]): Promise<pg.PoolClient> | void {
        if (callback) return super.connect(callback);
        return sleep(200).then(() => super.connect());
      }
    }
    const cache = newCache(3_600, SlowPool);
    let fullLoads = 0;
    cache.onSync((event) => (fullLoads += event.kind === 'full' ? 1 : 0));
    await cache.start();
    fullLoads = 0;
    for (let i = 0; i < 20; i++) await sql.query("SELECT pg_notify('sitekey_credentials', '*')");
    // Unmerged, 20 loads of 200 ms would still be queued here, and the change below would wait for them.
    await sleep(1_500);
    assert.ok(fullLoads >= 1 && fullLoads <= 2, `${fullLoads} full loads for 20 requests`);
    const elapsed = await timeUntil([cache], (s) => s?.site('1001')?.enabled === false, () => sql.query('UPDATE sites SET enabled = false WHERE id = 1001'));
    assert.ok(elapsed < BOUND_MS, `the change after a burst took ${Math.round(elapsed)} ms`);
    await timeUntil([cache], (s) => s?.site('1001')?.enabled === true, () => sql.query('UPDATE sites SET enabled = true WHERE id = 1001'));
  });

  it('is sent no notification and does not reload for last-used writes or a rename, and reloads once for a change it holds', async () => {
    const cache = newCache();
    let notifications = 0;
    let reloads = 0;
    cache.onNotificationReceived(() => (notifications += 1));
    cache.onSync((event) => (reloads += event.kind === 'sites' ? 1 : 0));
    await cache.start();
    await sql.query('UPDATE api_keys SET last_used_at = now()');
    await sql.query('UPDATE sites SET name = $1 WHERE id = 1001', ['renamed']);
    // Notifications arrive in commit order on the one LISTEN connection: once this later change is in
    // the snapshot, any notification the two writes above had sent has arrived, and been acted on.
    await timeUntil([cache], (s) => s?.site('1001')?.enabled === false, () => sql.query('UPDATE sites SET enabled = false WHERE id = 1001'));
    assert.equal(notifications, 1, 'only the disable notified');
    assert.equal(reloads, 1, 'only the disable reloaded the site');
    await timeUntil([cache], (s) => s?.site('1001')?.enabled === true, () => sql.query('UPDATE sites SET enabled = true WHERE id = 1001'));
  });

  it('with SNAPSHOT_MAX_STALENESS_SECONDS=0 never judges the snapshot too old; with a limit it does', async () => {
    const unlimited = newCache(3_600, pg.Pool, { maxStalenessSeconds: 0 });
    const limited = newCache(3_600, pg.Pool, { maxStalenessSeconds: 900 });
    await Promise.all([unlimited.start(), limited.start()]);
    const inTenYears = Date.now() + 10 * 365 * 86_400_000;
    assert.ok(unlimited.snapshot(inTenYears));
    assert.equal(unlimited.status(inTenYears).ready, true);
    assert.equal(limited.snapshot(inTenYears), undefined);
    assert.equal(limited.status(Date.now() + 901_000).ready, false);
    assert.equal(limited.status(Date.now()).ready, true);
  });

  it('stops handing out its snapshot once full loads have failed for longer than the staleness limit, and recovers', async () => {
    let failing = false;
    class UnreachablePool extends pg.Pool {
      override connect(): Promise<pg.PoolClient>;
      override connect(callback: Parameters<pg.Pool['connect']>[0]): void;
      override connect(callback?: Parameters<pg.Pool['connect']>[0]): Promise<pg.PoolClient> | void {
        if (callback) return super.connect(callback);
        return failing ? Promise.reject(new Error('planted: database unreachable')) : super.connect();
      }
    }
    const cache = newCache(3_600, UnreachablePool, { maxStalenessSeconds: 1 });
    let failures = 0;
    cache.onSyncFailure(() => (failures += 1));
    await cache.start();
    assert.ok(cache.snapshot(Date.now()));
    failing = true;
    const started = performance.now();
    while (cache.snapshot(Date.now()) !== undefined) {
      assert.ok(performance.now() - started < 10_000, 'the snapshot was still handed out 10 s after loads began to fail');
      await sleep(20);
    }
    const status = cache.status(Date.now());
    assert.equal(status.ready, false);
    assert.ok(status.staleSeconds > 1, `judged stale at ${status.staleSeconds} s`);
    assert.ok(failures >= 1, 'full loads were retried (and failed) meanwhile');
    failing = false;
    await timeUntil([cache], (s) => s !== undefined, async () => {});
    assert.equal(cache.status(Date.now()).ready, true);
  });

  it('reloads in full after a TRUNCATE, whose notification names no site', async () => {
    const cache = newCache();
    let fullLoads = 0;
    cache.onSync((event) => (fullLoads += event.kind === 'full' ? 1 : 0));
    await cache.start();
    fullLoads = 0;
    await sql.query("INSERT INTO allowlist_entries VALUES (1001, '192.0.2.0/24')");
    await timeUntil([cache], (s) => s?.site('1001')?.allowlist.check('192.0.2.9', 'ipv4') === true, async () => {});
    const elapsed = await timeUntil([cache], (s) => s?.site('1001')?.allowlist.check('203.0.113.1', 'ipv4') === false, () => sql.query('TRUNCATE allowlist_entries'));
    assert.ok(elapsed < BOUND_MS, `the TRUNCATE took ${Math.round(elapsed)} ms`);
    assert.ok(fullLoads >= 1, 'a full load followed');
    await sql.query("INSERT INTO allowlist_entries VALUES (1001, '203.0.113.0/24')");
    await timeUntil([cache], (s) => s?.site('1001')?.allowlist.check('203.0.113.1', 'ipv4') === true, async () => {});
  });

  it("serves a role with no grants looping NOTIFY '*' with at most one full load per interval, while changes still arrive", async () => {
    const cache = newCache();
    let fullLoads = 0;
    cache.onSync((event) => (fullLoads += event.kind === 'full' ? 1 : 0));
    await cache.start();
    const role = `stormer_${process.pid}`;
    await sql.query(`CREATE ROLE ${role} LOGIN PASSWORD 'storm-secret'`);
    const stormUrl = new URL(database.url);
    stormUrl.username = role;
    stormUrl.password = 'storm-secret';
    const stormer = new pg.Client({ connectionString: stormUrl.toString() });
    await stormer.connect();
    try {
      fullLoads = 0;
      let storming = true;
      let sent = 0;
      const storm = (async () => {
        while (storming) {
          await stormer.query("NOTIFY sitekey_credentials, '*'");
          sent += 1;
        }
      })();
      const stormStarted = performance.now();
      // A per-site change is not held up by the storm.
      const disabled = await timeUntil([cache], (s) => s?.site('1001')?.enabled === false, () => sql.query('UPDATE sites SET enabled = false WHERE id = 1001'));
      assert.ok(disabled < BOUND_MS, `a change during the storm took ${Math.round(disabled)} ms`);
      // A TRUNCATE ('*', like the storm's) is in the snapshot by the end of the interval at the latest.
      const truncated = await timeUntil([cache], (s) => s?.site('1001')?.allowlist.check('203.0.113.1', 'ipv4') === false, () => sql.query('TRUNCATE allowlist_entries'));
      assert.ok(truncated < NOTIFIED_FULL_LOAD_INTERVAL_MS + BOUND_MS, `the TRUNCATE during the storm took ${Math.round(truncated)} ms`);
      while (performance.now() - stormStarted < 2 * NOTIFIED_FULL_LOAD_INTERVAL_MS) await sleep(100);
      storming = false;
      await storm;
      const stormMs = performance.now() - stormStarted;
      assert.ok(sent > 100, `only ${sent} notifications sent`);
      const allowed = Math.ceil(stormMs / NOTIFIED_FULL_LOAD_INTERVAL_MS) + 1;
      assert.ok(fullLoads <= allowed, `${fullLoads} full loads for ${sent} notifications in ${Math.round(stormMs)} ms (at most ${allowed})`);
      assert.equal(cache.status(Date.now()).ready, true);
    } finally {
      await stormer.end();
      await sql.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
      await sql.query('UPDATE sites SET enabled = true WHERE id = 1001');
      await sql.query("INSERT INTO allowlist_entries VALUES (1001, '203.0.113.0/24')");
    }
  });

  it('retries a per-site reload that failed, and reports the failure', async () => {
    let failConnects = 0;
    class FailingPool extends pg.Pool {
      override connect(): Promise<pg.PoolClient>;
      override connect(callback: Parameters<pg.Pool['connect']>[0]): void;
      override connect(callback?: Parameters<pg.Pool['connect']>[0]): Promise<pg.PoolClient> | void {
        if (callback) return super.connect(callback);
        if (failConnects > 0) {
          failConnects--;
          return Promise.reject(new Error('planted connection failure'));
        }
        return super.connect();
      }
    }
    const cache = newCache(3_600, FailingPool);
    const failures: string[] = [];
    cache.onSyncFailure((event) => failures.push(event.kind));
    await cache.start();
    failConnects = 1;
    const elapsed = await timeUntil([cache], (s) => s?.site('1001')?.enabled === false, () => sql.query('UPDATE sites SET enabled = false WHERE id = 1001'));
    assert.deepEqual(failures, ['sites']);
    assert.ok(elapsed >= 900, `the change arrived after ${Math.round(elapsed)} ms, before the retry`);
    assert.equal(cache.status(Date.now()).pendingSites, 0);
    await timeUntil([cache], (s) => s?.site('1001')?.enabled === true, () => sql.query('UPDATE sites SET enabled = true WHERE id = 1001'));
  });

  it('listens on the connection DATABASE_LISTEN_URL names, not on the pool', async () => {
    const role = `listener_${process.pid}`;
    await sql.query(`CREATE ROLE ${role} LOGIN PASSWORD 'listen-secret'`);
    try {
      const listenUrl = new URL(database.url);
      listenUrl.username = role;
      listenUrl.password = 'listen-secret';
      const cache = newCache(3_600, pg.Pool, { listenUrl: listenUrl.toString() });
      await cache.start();
      const { rows } = await sql.query<{ usename: string; query: string }>(
        'SELECT usename, query FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database() AND usename = $2',
        [LISTEN_APPLICATION_NAME, role],
      );
      assert.equal(rows.length, 1, 'one LISTEN session, as the listen role');
      assert.match(rows[0]?.query ?? '', /^LISTEN sitekey_credentials/);
      await cache.stop();
    } finally {
      await sql.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    }
  });

  async function insertKey(site: string, key: string) {
    await sql.query('INSERT INTO api_keys (site_id, key_sha256, last_five) VALUES ($1, $2, $3)', [
      site,
      Buffer.from(hashApiKey(key), 'hex'),
      key.slice(-5),
    ]);
  }
});
