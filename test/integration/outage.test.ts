import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { hashApiKey } from '../../src/decision/api-key.js';
import { freePort, startEmbeddedPostgres, type EmbeddedServer } from '../../src/embedded/embedded-postgres.js';
import { migrate } from '../../src/store/migrate.js';
import { insertSite } from '../support/credentials.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { startService, type RunningService } from '../support/service.js';

const KEY = '11111111-1111-4111-8111-111111111111';
const LATER_KEY = '22222222-2222-4222-8222-222222222222';
const MAX_STALENESS_SECONDS = 3;
const UNAVAILABLE = 14;

/**
 * Issue #4: with PostgreSQL stopped the service decides from its last snapshot, answers UNAVAILABLE
 * once that is older than SNAPSHOT_MAX_STALENESS_SECONDS, and recovers by itself when PostgreSQL returns.
 * This file stops and starts a server, so it runs its own rather than the one the other tests share.
 */
describe('a PostgreSQL outage', () => {
  let dataDir: string;
  let port: number;
  let postgres: EmbeddedServer | undefined;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;

  const request = (key: string) => ({ authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) });
  const outcome = async (key: string) => {
    try {
      return verdict(await check(client, request(key)));
    } catch (error) {
      return (error as { code?: number }).code === UNAVAILABLE ? 'UNAVAILABLE' : `error ${String(error)}`;
    }
  };
  const readyStatus = async () => (await fetch(`${service.httpBase}/readyz`)).status;
  async function waitFor<T>(what: string, probe: () => Promise<T>, expected: T, limitMs: number): Promise<void> {
    const deadline = Date.now() + limitMs;
    let last = await probe();
    while (last !== expected) {
      if (Date.now() > deadline) assert.fail(`${what}: still ${String(last)} after ${limitMs} ms`);
      await sleep(100);
      last = await probe();
    }
  }

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-outage-'));
    port = await freePort();
    postgres = await startEmbeddedPostgres({ dataDir, persistent: true, port });
    await migrate(postgres.url);
    const sql = new pg.Client({ connectionString: postgres.url });
    await sql.connect();
    await insertSite(sql, { id: '1001', keys: [{ key: KEY }], cidrs: ['203.0.113.0/24'] });
    await sql.end();
    service = await startService({
      DATABASE_URL: postgres.url,
      LOG_LEVEL: 'warn',
      SNAPSHOT_MAX_STALENESS_SECONDS: String(MAX_STALENESS_SECONDS),
    });
    client = authorizationClient(service.grpcTarget);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await postgres?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps deciding from the last snapshot while PostgreSQL is down', async () => {
    assert.equal(await outcome(KEY), 'allow');
    await postgres?.stop();
    postgres = undefined;
    assert.equal(await outcome(KEY), 'allow');
    assert.equal(await outcome(LATER_KEY), 102);
    assert.equal(await readyStatus(), 200);
  });

  it('answers UNAVAILABLE and reports not ready past the staleness limit', async () => {
    await waitFor('the check', () => outcome(KEY), 'UNAVAILABLE', (MAX_STALENESS_SECONDS + 3) * 1000);
    assert.equal(await readyStatus(), 503);
    const body = (await (await fetch(`${service.httpBase}/readyz`)).json()) as { snapshot: { staleSeconds: number } };
    assert.ok(body.snapshot.staleSeconds > MAX_STALENESS_SECONDS);
    assert.match(service.output(), /credential database unreachable/);
  });

  it('recovers by itself when PostgreSQL returns, with what changed since', async () => {
    postgres = await startEmbeddedPostgres({ dataDir, persistent: true, port });
    const sql = new pg.Client({ connectionString: postgres.url });
    await sql.connect();
    await sql.query(
      `INSERT INTO api_keys (site_id, key_sha256, last_five) VALUES (1001, decode($1, 'hex'), $2)`,
      [hashApiKey(LATER_KEY), LATER_KEY.slice(-5)],
    );
    await sql.end();
    await waitFor('the check', () => outcome(KEY), 'allow', 15_000);
    await waitFor('the new key', () => outcome(LATER_KEY), 'allow', 5_000);
    assert.equal(await readyStatus(), 200);
  });
});
