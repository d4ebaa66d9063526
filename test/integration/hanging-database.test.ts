import assert from 'node:assert/strict';
import { readdir, readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { insertSite } from '../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { startService, type RunningService } from '../support/service.js';
import { startEmbeddedPostgres, type EmbeddedServer } from '../../src/embedded/embedded-postgres.js';
import { signalIfThere } from '../../src/embedded/processes.js';
import { migrate } from '../../src/store/migrate.js';

const LIMIT_SECONDS = 4;
// Polling, a loaded machine and the last check's own round trip: what may pass beyond the limit.
const SLACK_MS = 2_000;
const UNAVAILABLE = 14;
const SITE = '1001';

type Outcome = 'allow' | number | 'UNAVAILABLE';
let keySequence = 0;
const newKey = () => `${String(++keySequence).padStart(8, '0')}-0000-4000-8000-000000000000`;

function serviceProbe(service: RunningService) {
  const client = authorizationClient(service.grpcTarget);
  const outcome = async (key: string): Promise<Outcome> => {
    try {
      return verdict(await check(client, { authorization: `${SITE}:${key}`, body: JSON.stringify({ siteid: Number(SITE), apikey: key }) }));
    } catch (error) {
      if ((error as { code?: number }).code === UNAVAILABLE) return 'UNAVAILABLE';
      throw error;
    }
  };
  const ready = async () => (await fetch(`${service.httpBase}/readyz`)).status === 200;
  return { client, outcome, ready };
}

/** Milliseconds until `probe` gives one of `expected`, failing past `limitMs`. */
async function timeUntil<T>(what: string, probe: () => Promise<T>, expected: readonly T[], limitMs: number): Promise<number> {
  const started = performance.now();
  let last = await probe();
  while (!expected.includes(last)) {
    if (performance.now() - started > limitMs) assert.fail(`${what}: still ${String(last)} after ${limitMs} ms`);
    await sleep(50);
    last = await probe();
  }
  return performance.now() - started;
}

async function addKey(sql: pg.Client, key: string): Promise<void> {
  await sql.query(
    `INSERT INTO api_keys (site_id, key_sha256, last_five) VALUES ($1, sha256(convert_to($2, 'UTF8')), right($2, 5))`,
    [SITE, key],
  );
}

/**
 * Issue #8: whatever the database does (a lock held for ever, a frozen server), a revoked key is
 * refused, or checks answer UNAVAILABLE, within SNAPSHOT_MAX_STALENESS_SECONDS of the revocation's
 * commit, /readyz says not ready, and the service recovers by itself once the database answers.
 */
describe('a database that hangs', () => {
  describe('behind an exclusive lock on a credential table', () => {
    let database: TestDatabase;
    let sql: pg.Client;
    let service: RunningService;
    let probe: ReturnType<typeof serviceProbe>;

    before(async () => {
      database = await freshDatabase();
      sql = new pg.Client({ connectionString: database.url });
      await sql.connect();
      await insertSite(sql, { id: SITE, cidrs: ['203.0.113.0/24'] });
      service = await startService({
        DATABASE_URL: database.url,
        MIGRATE_ON_START: 'false',
        LOG_LEVEL: 'warn',
        SNAPSHOT_MAX_STALENESS_SECONDS: String(LIMIT_SECONDS),
        SNAPSHOT_REFRESH_SECONDS: '2',
      });
      probe = serviceProbe(service);
    });

    after(async () => {
      probe?.client.close();
      await service?.stop();
      await sql?.end();
      await database?.drop();
    });

    for (const table of ['allowlist_entries', 'sites', 'api_keys']) {
      it(`refuses a key revoked while ${table} is locked, reports not ready, and recovers`, async () => {
        const key = newKey();
        await addKey(sql, key);
        await timeUntil('the new key', () => probe.outcome(key), ['allow'], 5_000);

        const locker = new pg.Client({ connectionString: database.url });
        await locker.connect();
        try {
          await locker.query('BEGIN');
          await locker.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
          // Let a periodic full resync start and block on the lock, as in the report.
          await sleep(2_500);
          if (table !== 'api_keys') {
            // A revocation of api_keys would itself wait for the lock; the others commit at once.
            await sql.query('UPDATE api_keys SET revoked_at = now() WHERE last_five = right($1, 5)', [key]);
          }
          const refusedAfter = await timeUntil(
            'the key after its revocation',
            () => probe.outcome(key),
            table === 'api_keys' ? ['UNAVAILABLE'] : [102, 'UNAVAILABLE'],
            LIMIT_SECONDS * 1000 + SLACK_MS,
          );
          assert.ok(refusedAfter <= LIMIT_SECONDS * 1000 + SLACK_MS);
          await timeUntil('/readyz', probe.ready, [false], LIMIT_SECONDS * 1000 + SLACK_MS);
          const body = (await (await fetch(`${service.httpBase}/readyz`)).json()) as { snapshot: { staleSeconds: number } };
          assert.ok(body.snapshot.staleSeconds > LIMIT_SECONDS, `staleSeconds ${body.snapshot.staleSeconds} while not ready`);
        } finally {
          await locker.query('ROLLBACK').catch(() => undefined);
          await locker.end();
        }
        if (table === 'api_keys') await sql.query('UPDATE api_keys SET revoked_at = now() WHERE last_five = right($1, 5)', [key]);
        await timeUntil('recovery after the lock is released', probe.ready, [true], 10_000);
        await timeUntil('the revoked key', () => probe.outcome(key), [102], 2_000);
        assert.match(service.output(), /credential database unreachable or not answering/);
      });
    }
  });

  describe('frozen (SIGSTOP on the postmaster and its backends)', () => {
    let dataDir: string;
    let postgres: EmbeddedServer;
    let service: RunningService;
    let probe: ReturnType<typeof serviceProbe>;
    let frozen: number[] = [];

    /** The postmaster and every process it forked: what a stopped VM or container freezes. */
    async function serverProcesses(): Promise<number[]> {
      const postmaster = Number((await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);
      const children: number[] = [];
      for (const entry of await readdir('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
        const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (parent === postmaster) children.push(Number(entry));
      }
      return [postmaster, ...children];
    }
    const signalAll = (pids: readonly number[], signal: NodeJS.Signals) => {
      for (const pid of pids) signalIfThere(pid, signal);
    };

    before(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-frozen-'));
      postgres = await startEmbeddedPostgres({ dataDir, persistent: false });
      await migrate(postgres.url);
      const sql = new pg.Client({ connectionString: postgres.url });
      await sql.connect();
      await insertSite(sql, { id: SITE, cidrs: ['203.0.113.0/24'] });
      await addKey(sql, '11111111-1111-4111-8111-111111111111');
      await sql.end();
      service = await startService({
        DATABASE_URL: postgres.url,
        LOG_LEVEL: 'warn',
        SNAPSHOT_MAX_STALENESS_SECONDS: String(LIMIT_SECONDS),
        SNAPSHOT_REFRESH_SECONDS: '2',
      });
      probe = serviceProbe(service);
    });

    after(async () => {
      signalAll(frozen, 'SIGCONT');
      probe?.client.close();
      await service?.stop();
      await postgres?.stop();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    });

    it('stops allowing within the staleness limit, and recovers when the server resumes', async () => {
      const key = '11111111-1111-4111-8111-111111111111';
      assert.equal(await probe.outcome(key), 'allow');
      frozen = await serverProcesses();
      signalAll(frozen, 'SIGSTOP');
      const cutOff = await timeUntil('checks on a frozen database', () => probe.outcome(key), ['UNAVAILABLE'], LIMIT_SECONDS * 1000 + SLACK_MS);
      assert.ok(cutOff <= LIMIT_SECONDS * 1000 + SLACK_MS);
      assert.equal(await probe.ready(), false);
      signalAll(frozen, 'SIGCONT');
      frozen = [];
      await timeUntil('recovery after SIGCONT', () => probe.outcome(key), ['allow'], 15_000);
      assert.equal(await probe.ready(), true);
    });
  });
});
