import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { Slices } from '../../../src/common/slices.js';
import { hashApiKey } from '../../../src/decision/api-key.js';
import type { CredentialSnapshot } from '../../../src/decision/types.js';
import { createLogger } from '../../../src/observe/logger.js';
import { CredentialCache, type SyncEvent } from '../../../src/store/credential-cache.js';
import { SiteDigests } from '../../../src/store/site-digests.js';
import { resyncSites } from '../../../src/store/snapshot-resync.js';
import { insertSite } from '../../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { eventually } from '../../support/eventually.js';

/** Sites 1 to SITES span three buckets of site ids, so that a change in one leaves the others unread. */
const SITES = 600;
const KEY = '44444444-4444-4444-8444-444444444444';
const NEW_KEY = '55555555-5555-4555-8555-555555555555';
const KEY_OF_COLUMNS_SITE = '66666666-6666-4666-8666-666666666666';
const ROTATED_KEY = '77777777-7777-4777-8777-777777777777';

/** Holds the next connection asked for outside pool.query (a resync's or a reload's transaction) until opened. */
class GatedPool extends pg.Pool {
  gate: Promise<void> | undefined;
  override connect(): Promise<pg.PoolClient>;
  override connect(callback: Parameters<pg.Pool['connect']>[0]): void;
  override connect(callback?: Parameters<pg.Pool['connect']>[0]): Promise<pg.PoolClient> | void {
    if (callback) return super.connect(callback);
    const gate = this.gate;
    this.gate = undefined;
    return gate === undefined ? super.connect() : gate.then(() => super.connect());
  }
}

/** A transaction's COMMIT held until opened: its reads are done, what it read not yet taken. */
class CommitGate {
  reached = false;
  open: () => void = () => undefined;
  readonly opened = new Promise<void>((resolveGate) => (this.open = resolveGate));
}

/** Holds the COMMIT of each next transaction (connections asked for outside pool.query) at the next gate. */
class CommitGatedPool extends pg.Pool {
  readonly gates: CommitGate[] = [];
  override connect(): Promise<pg.PoolClient>;
  override connect(callback: Parameters<pg.Pool['connect']>[0]): void;
  override connect(callback?: Parameters<pg.Pool['connect']>[0]): Promise<pg.PoolClient> | void {
    if (callback) return super.connect(callback);
    const gate = this.gates.shift();
    return super.connect().then((client) => {
      if (gate === undefined) return client;
      const query = client.query.bind(client) as (text: unknown, values?: unknown) => Promise<unknown>;
      const held = (text: unknown, values?: unknown) => {
        if (text !== 'COMMIT') return query(text, values);
        (client as { query: unknown }).query = query;
        gate.reached = true;
        return gate.opened.then(() => query(text));
      };
      (client as { query: unknown }).query = held;
      return client;
    });
  }
}

/**
 * The periodic resync reads again only the sites whose data changed since the snapshot read them,
 * whoever changed it and whether or not a notification said so.
 */
describe('incremental resync', () => {
  let database: TestDatabase;
  let sql: pg.Client;
  const pools: pg.Pool[] = [];
  const caches: CredentialCache[] = [];

  /** A started cache, and every sync it reports from its first load on. */
  async function startedCache<P extends pg.Pool>(refreshSeconds: number, PoolClass: new (config: pg.PoolConfig) => P): Promise<{ cache: CredentialCache; syncs: SyncEvent[]; pool: P }> {
    const pool = new PoolClass({ connectionString: database.url, max: 2 });
    pools.push(pool);
    const cache = new CredentialCache({ pool, listenUrl: database.url, refreshSeconds, maxStalenessSeconds: 900, logger: createLogger('silent') });
    caches.push(cache);
    const syncs: SyncEvent[] = [];
    cache.onSync((event) => syncs.push(event));
    await cache.start();
    return { cache, syncs, pool };
  }

  const fullSyncs = (syncs: readonly SyncEvent[]) => syncs.filter((sync) => sync.kind === 'full');
  const hasKey = (snapshot: CredentialSnapshot | undefined, site: string, key: string) => snapshot?.site(site)?.keysByHash.get(hashApiKey(key)) !== undefined;

  /** Runs `change` with the triggers off (as a restore or a replica would): no notification is sent. */
  async function withoutNotification(change: () => Promise<unknown>): Promise<void> {
    await sql.query('BEGIN');
    try {
      await sql.query('SET LOCAL session_replication_role = replica');
      await change();
      await sql.query('COMMIT');
    } catch (error) {
      await sql.query('ROLLBACK');
      throw error;
    }
  }

  before(async () => {
    database = await freshDatabase();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    await sql.query('INSERT INTO sites (id, enabled) SELECT g, true FROM generate_series(1, $1::int) g', [SITES]);
    await sql.query("INSERT INTO allowlist_entries (site_id, cidr) SELECT g, '203.0.113.0/24' FROM generate_series(1, $1::int) g", [SITES]);
    await insertSite(sql, { id: String(SITES + 1), keys: [{ key: KEY }] });
  });

  after(async () => {
    await Promise.all(caches.map((cache) => cache.stop()));
    await Promise.all(pools.map((pool) => pool.end()));
    await sql?.end();
    await database?.drop();
  });

  it('reads no site again when nothing changed, and keeps every site object', async () => {
    const { cache, syncs } = await startedCache(3_600, pg.Pool);
    assert.equal(fullSyncs(syncs)[0]?.sitesRead, SITES + 1, 'the first load reads every site');
    const site = cache.snapshot(Date.now())?.site('17');
    // '*' asks for a full resync at once: the same resync the timer runs every SNAPSHOT_REFRESH_SECONDS.
    await sql.query("SELECT pg_notify('sitekey_credentials', '*')");
    await eventually('a second full resync', async () => fullSyncs(syncs).length, (count) => count >= 2, 10_000);
    assert.equal(fullSyncs(syncs)[1]?.sitesRead, 0);
    assert.equal(cache.snapshot(Date.now())?.site('17'), site, 'an unchanged site was rebuilt');
    assert.equal(cache.status(Date.now()).sites, SITES + 1);
  });

  it('does not read a site again that its own notification reloaded', async () => {
    const { cache, syncs } = await startedCache(3_600, pg.Pool);
    await sql.query('UPDATE sites SET enabled = false WHERE id = 250');
    await eventually('the reload of site 250', async () => cache.snapshot(Date.now())?.site('250')?.enabled, (enabled) => enabled === false, 10_000);
    assert.deepEqual(
      syncs.filter((sync) => sync.kind === 'sites').map((sync) => sync.sitesRead),
      [1],
    );
    await sql.query("SELECT pg_notify('sitekey_credentials', '*')");
    await eventually('a full resync after the reload', async () => fullSyncs(syncs).length, (count) => count >= 2, 10_000);
    assert.equal(fullSyncs(syncs)[1]?.sitesRead, 0, 'the resync read the reloaded site again');
    await sql.query('UPDATE sites SET enabled = true WHERE id = 250');
    await eventually('site 250 enabled again', async () => cache.snapshot(Date.now())?.site('250')?.enabled, (enabled) => enabled === true, 10_000);
  });

  it('reloads the sites of one large change run by run, each with its digest, so the next resync reads none of them', async () => {
    const { cache, syncs } = await startedCache(3_600, pg.Pool);
    // More sites than a reload reads in one run (200), over all three buckets.
    await sql.query("UPDATE allowlist_entries SET cidr = '198.18.0.0/24' WHERE site_id BETWEEN 101 AND 550");
    const reloaded = () => syncs.filter((sync) => sync.kind === 'sites').reduce((sum, sync) => sum + sync.sitesRead, 0);
    await eventually('the reloads of the 450 sites', async () => reloaded(), (read) => read >= 450, 10_000);
    const snapshot = cache.snapshot(Date.now());
    for (const siteId of ['101', '300', '550']) assert.equal(snapshot?.site(siteId)?.allowlist.check('198.18.0.9', 'ipv4'), true, `site ${siteId}`);
    assert.equal(snapshot?.site('551')?.allowlist.check('198.18.0.9', 'ipv4'), false);
    await sql.query("SELECT pg_notify('sitekey_credentials', '*')");
    await eventually('a full resync after the reloads', async () => fullSyncs(syncs).length, (count) => count >= 2, 10_000);
    assert.equal(fullSyncs(syncs)[1]?.sitesRead, 0, 'the resync read reloaded sites again');
    assert.equal(reloaded(), 450);
    await sql.query("UPDATE allowlist_entries SET cidr = '203.0.113.0/24' WHERE site_id BETWEEN 101 AND 550");
    await eventually('the allowlists as they were', async () => cache.snapshot(Date.now())?.site('550')?.allowlist.check('203.0.113.9', 'ipv4'), (admitted) => admitted === true, 10_000);
  });

  it('keeps the digest of a site reloaded while a resync runs: neither that resync nor the next reads it again', async () => {
    const { cache, syncs, pool } = await startedCache(3_600, GatedPool);
    let open: () => void = () => undefined;
    pool.gate = new Promise((resolveGate) => (open = resolveGate));
    await sql.query("SELECT pg_notify('sitekey_credentials', '*')");
    await eventually('a resync waiting for its connection', async () => pool.gate === undefined, (waiting) => waiting, 10_000);
    await sql.query('UPDATE sites SET enabled = false WHERE id = 260');
    await eventually('the reload of site 260', async () => cache.snapshot(Date.now())?.site('260')?.enabled, (enabled) => enabled === false, 10_000);
    open();
    await eventually('the resync that waited', async () => fullSyncs(syncs).length, (count) => count >= 2, 10_000);
    assert.equal(fullSyncs(syncs)[1]?.sitesRead, 0, 'the resync that ran beside the reload read the site again');
    // The next '*' is served once NOTIFIED_FULL_LOAD_INTERVAL_MS has passed since the last.
    await sql.query("SELECT pg_notify('sitekey_credentials', '*')");
    await eventually('the resync after', async () => fullSyncs(syncs).length, (count) => count >= 3, 15_000);
    assert.equal(fullSyncs(syncs)[2]?.sitesRead, 0, 'the resync after the reload read the site again');
    assert.equal(cache.snapshot(Date.now())?.site('260')?.enabled, false);
    await sql.query('UPDATE sites SET enabled = true WHERE id = 260');
    await eventually('site 260 enabled again', async () => cache.snapshot(Date.now())?.site('260')?.enabled, (enabled) => enabled === true, 10_000);
  });

  it('removes a site deleted with no notification after its own notification reloaded it, the only site of its bucket', async () => {
    // Bucket 100 (site ids 25,600 to 25,855) holds this site alone: once it is gone, so is the bucket.
    const alone = '25600';
    await sql.query('INSERT INTO sites (id, enabled) VALUES ($1, true)', [alone]);
    await sql.query("INSERT INTO allowlist_entries (site_id, cidr) VALUES ($1, '203.0.113.0/24')", [alone]);
    const { cache, syncs } = await startedCache(3_600, pg.Pool);
    await sql.query('UPDATE sites SET enabled = false WHERE id = $1', [alone]);
    await eventually('the reload of the site', async () => cache.snapshot(Date.now())?.site(alone)?.enabled, (enabled) => enabled === false, 10_000);
    await withoutNotification(async () => {
      await sql.query('DELETE FROM allowlist_entries WHERE site_id = $1', [alone]);
      await sql.query('DELETE FROM sites WHERE id = $1', [alone]);
    });
    await sql.query("SELECT pg_notify('sitekey_credentials', '*')");
    await eventually('a full resync after the deletion', async () => fullSyncs(syncs).length, (count) => count >= 2, 10_000);
    assert.equal(cache.snapshot(Date.now())?.site(alone), undefined, 'the deleted site still authenticates');
  });

  it('picks up a site added, one changed, one removed and a key revoked with no notification, at the next periodic resync, reading only those', async () => {
    const { cache, syncs } = await startedCache(1, pg.Pool);
    const unchanged = cache.snapshot(Date.now())?.site('17');
    await withoutNotification(async () => {
      await insertSite(sql, { id: String(SITES + 2), keys: [{ key: NEW_KEY }], cidrs: ['198.51.100.0/24'] });
      await sql.query('UPDATE sites SET enabled = false WHERE id = 300');
      await sql.query('DELETE FROM allowlist_entries WHERE site_id = 42');
      await sql.query('DELETE FROM sites WHERE id = 42');
      await sql.query('UPDATE api_keys SET revoked_at = now() WHERE site_id = $1', [String(SITES + 1)]);
    });
    await eventually(
      'the changes in the snapshot',
      async () => cache.snapshot(Date.now()),
      (s) => hasKey(s, String(SITES + 2), NEW_KEY) && s?.site('300')?.enabled === false && s?.site('42') === undefined && !hasKey(s, String(SITES + 1), KEY),
      10_000,
    );
    assert.deepEqual(
      syncs.filter((sync) => sync.kind === 'sites'),
      [],
      'a notification was sent',
    );
    // Every resync since the first load read nothing, but the one after the commit: the three sites that changed.
    const after = fullSyncs(syncs).slice(1);
    assert.equal(
      after.reduce((sum, sync) => sum + sync.sitesRead, 0),
      3,
      `sites read by the resyncs since: ${after.map((sync) => sync.sitesRead).join(', ')}`,
    );
    const snapshot = cache.snapshot(Date.now());
    assert.equal(snapshot?.site('17'), unchanged, 'an unchanged site was rebuilt');
    assert.equal(snapshot?.site(String(SITES + 2))?.allowlist.check('198.51.100.7', 'ipv4'), true);
    assert.equal(cache.status(Date.now()).sites, SITES + 1);
    assert.equal(cache.status(Date.now()).activeKeys, 1);
  });

  it('picks up a change to each column the snapshot reads, with no notification, reading only the site changed', async () => {
    const keysSite = String(SITES + 3);
    await insertSite(sql, { id: keysSite, keys: [{ key: KEY_OF_COLUMNS_SITE }] });
    const { cache, syncs } = await startedCache(1, pg.Pool);
    const at = Date.parse('2031-05-06T07:08:09.123Z');
    const site = (id: string) => cache.snapshot(Date.now())?.site(id);
    const changes: ReadonlyArray<readonly [column: string, sql: string, seen: () => boolean]> = [
      ['sites.apikey_grace_until', `UPDATE sites SET apikey_grace_until = to_timestamp(${at / 1000}) WHERE id = 20`, () => site('20')?.graceUntil === at],
      ['sites.auth_method', "UPDATE sites SET auth_method = 'tokens' WHERE id = 270", () => site('270')?.authMethod === 'tokens'],
      ['sites.tokens_not_before', `UPDATE sites SET tokens_not_before = to_timestamp(${at / 1000}) WHERE id = 530`, () => site('530')?.tokensNotBefore === at],
      ['api_keys.expires_at', `UPDATE api_keys SET expires_at = to_timestamp(${at / 1000}) WHERE site_id = ${keysSite}`, () => site(keysSite)?.keysByHash.get(hashApiKey(KEY_OF_COLUMNS_SITE))?.expiresAt === at],
      ['api_keys.key_sha256', `UPDATE api_keys SET key_sha256 = sha256(convert_to('${ROTATED_KEY}', 'UTF8')) WHERE site_id = ${keysSite}`, () => site(keysSite)?.keysByHash.get(hashApiKey(ROTATED_KEY)) !== undefined],
      ['allowlist_entries.cidr', "UPDATE allowlist_entries SET cidr = '192.0.2.0/24' WHERE site_id = 21", () => site('21')?.allowlist.check('192.0.2.9', 'ipv4') === true],
      ['token_clients', "INSERT INTO token_clients (client_id, site_id) VALUES ('resync-client', 271)", () => site('271')?.tokenClients.has('resync-client') === true],
      [
        'token_clients.tokens_not_before',
        `UPDATE token_clients SET tokens_not_before = to_timestamp(${at / 1000}) WHERE client_id = 'resync-client'`,
        () => site('271')?.tokenClients.get('resync-client') === at,
      ],
    ];
    for (const [column, change, seen] of changes) {
      const resyncsBefore = fullSyncs(syncs).length;
      await withoutNotification(() => sql.query(change));
      await eventually(`${column} changed in the snapshot`, async () => seen(), (isSeen) => isSeen, 10_000);
      const read = fullSyncs(syncs).slice(resyncsBefore).reduce((sum, sync) => sum + sync.sitesRead, 0);
      assert.equal(read, 1, `sites read again after ${column} changed`);
    }
    assert.deepEqual(syncs.filter((sync) => sync.kind === 'sites'), [], 'a notification was sent');
  });

  it('finds a site removed whose digest was forgotten while the snapshot still holds it', async () => {
    // A kept reload with no digest known leaves its site so (SiteDigests.settleReloads): held, digest unknown.
    const site = '30000';
    await insertSite(sql, { id: site });
    await insertSite(sql, { id: '30001' });
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    pools.push(pool);
    const held = new SiteDigests();
    await held.takeResync(await resyncSites(pool, held), new Slices());
    held.forget(site);
    await withoutNotification(() => sql.query('DELETE FROM sites WHERE id = $1', [site]));
    const resync = await resyncSites(pool, held);
    assert.deepEqual(resync.removed, [site], 'the deleted site would stay in the snapshot');
    assert.deepEqual([...resync.changed.keys()], [], 'its bucket neighbour did not change');
  });

  it('removes a site deleted with no notification after a reload older than the last resync landed', async () => {
    const { cache, syncs, pool } = await startedCache(3_600, GatedPool);
    let open: () => void = () => undefined;
    pool.gate = new Promise((resolveGate) => (open = resolveGate));
    // The site's notification starts a reload, held before it reads; a resync begins and ends meanwhile.
    await sql.query('UPDATE sites SET enabled = false WHERE id = 270');
    await eventually('the reload waiting for its connection', async () => pool.gate === undefined, (waiting) => waiting, 10_000);
    await sql.query("SELECT pg_notify('sitekey_credentials', '*')");
    await eventually('a resync that began after the reload', async () => fullSyncs(syncs).length, (count) => count >= 2, 10_000);
    assert.equal(cache.snapshot(Date.now())?.site('270')?.enabled, false);
    open();
    await eventually('the reload, landing after the resync', async () => syncs.filter((sync) => sync.kind === 'sites').length, (count) => count >= 1, 10_000);
    await withoutNotification(async () => {
      await sql.query('DELETE FROM allowlist_entries WHERE site_id = 270');
      await sql.query('DELETE FROM sites WHERE id = 270');
    });
    await sql.query("SELECT pg_notify('sitekey_credentials', '*')");
    await eventually('site 270 gone from the snapshot', async () => cache.snapshot(Date.now())?.site('270'), (site) => site === undefined, 15_000);
  });

  it('reads a site again whose reload began before a resync and landed after the resync compared it', async () => {
    const { cache, syncs, pool } = await startedCache(3_600, CommitGatedPool);
    const reload = new CommitGate();
    const resync = new CommitGate();
    pool.gates.push(reload);
    // The reload reads site 280 disabled, then waits; the site is enabled again with no notification.
    await sql.query('UPDATE sites SET enabled = false WHERE id = 280');
    await eventually('the reload, its rows read', async () => reload.reached, (reached) => reached, 10_000);
    await withoutNotification(() => sql.query('UPDATE sites SET enabled = true WHERE id = 280'));
    // A resync compares the site as it is now, enabled, as the snapshot holds it: unchanged, it reads nothing.
    pool.gates.push(resync);
    await sql.query("SELECT pg_notify('sitekey_credentials', '*')");
    await eventually('the resync, its comparisons done', async () => resync.reached, (reached) => reached, 10_000);
    reload.open();
    await eventually('the older reload landing', async () => syncs.filter((sync) => sync.kind === 'sites').length, (count) => count >= 1, 10_000);
    resync.open();
    await eventually('site 280 as the database holds it, enabled', async () => cache.snapshot(Date.now())?.site('280')?.enabled, (enabled) => enabled === true, 10_000);
  });
});
