import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const PROPAGATION_BOUND_MS = 1_000;

/**
 * Issue #4: a change made by the CLI or by plain SQL reaches every running replica within a second.
 * Two real `serve` processes share one database; each change is timed until both replicas agree.
 */
describe('credential changes reach every replica within one second', () => {
  let database: TestDatabase;
  const replicas: RunningService[] = [];
  const clients: Array<ReturnType<typeof authorizationClient>> = [];
  let sql: pg.Client;

  async function cli(...args: string[]): Promise<string> {
    const result = await runCli(database.url, args);
    assert.equal(result.code, 0, result.stderr);
    return result.stdout;
  }

  async function issueKey(site: string): Promise<{ apiKey: string; keyId: string }> {
    return JSON.parse(await cli('key', 'issue', site, '--json')) as { apiKey: string; keyId: string };
  }

  const request = (site: string, apiKey: string, ip = '203.0.113.7') => ({
    authorization: `${site}:${apiKey}`,
    ip,
    body: JSON.stringify({ siteid: Number(site), apikey: apiKey }),
  });

  /** Milliseconds from the change until every replica answers `expected`. */
  async function timeUntilAll(args: ReturnType<typeof request>, expected: 'allow' | number, change: () => Promise<unknown>): Promise<number> {
    const started = performance.now();
    await change();
    const pending = new Set(clients.keys());
    while (pending.size > 0) {
      for (const index of [...pending]) {
        const client = clients[index];
        if (client && verdict(await check(client, args)) === expected) pending.delete(index);
      }
      if (performance.now() - started > 5_000) break;
      if (pending.size > 0) await sleep(10);
    }
    assert.equal(pending.size, 0, `replicas ${[...pending].join(', ')} never answered ${expected}`);
    return performance.now() - started;
  }

  before(async () => {
    database = await freshDatabase();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    await cli('site', 'add', '1001');
    await cli('ip', 'allow', '1001', '203.0.113.0/24');
    for (let i = 0; i < 2; i++) {
      const replica = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', LOG_LEVEL: 'warn' });
      replicas.push(replica);
      clients.push(authorizationClient(replica.grpcTarget));
    }
  });

  after(async () => {
    for (const client of clients) client.close();
    await Promise.all(replicas.map((replica) => replica.stop()));
    await sql?.end();
    await database?.drop();
  });

  it('a newly issued key is accepted, then refused once revoked by the CLI', async () => {
    let key = { apiKey: '', keyId: '' };
    const added = await timeUntilAll(request('1001', '00000000-0000-4000-8000-000000000000'), 102, async () => {
      key = await issueKey('1001');
    });
    const accepted = await timeUntilAll(request('1001', key.apiKey), 'allow', async () => {});
    const revoked = await timeUntilAll(request('1001', key.apiKey), 102, () => cli('key', 'revoke', '1001', key.keyId));
    assert.ok(accepted + added < PROPAGATION_BOUND_MS, `new key took ${Math.round(added + accepted)} ms`);
    assert.ok(revoked < PROPAGATION_BOUND_MS, `revocation took ${Math.round(revoked)} ms`);
  });

  it('disabling and enabling a site', async () => {
    const key = await issueKey('1001');
    await timeUntilAll(request('1001', key.apiKey), 'allow', async () => {});
    const disabled = await timeUntilAll(request('1001', key.apiKey), 101, () => cli('site', 'disable', '1001'));
    const enabled = await timeUntilAll(request('1001', key.apiKey), 'allow', () => cli('site', 'enable', '1001'));
    assert.ok(disabled < PROPAGATION_BOUND_MS, `disable took ${Math.round(disabled)} ms`);
    assert.ok(enabled < PROPAGATION_BOUND_MS, `enable took ${Math.round(enabled)} ms`);
  });

  it('allowlist changes', async () => {
    const key = await issueKey('1001');
    const fromNewOffice = request('1001', key.apiKey, '192.0.2.10');
    const allowed = await timeUntilAll(fromNewOffice, 'allow', () => cli('ip', 'allow', '1001', '192.0.2.0/28'));
    const revoked = await timeUntilAll(fromNewOffice, 103, () => cli('ip', 'revoke', '1001', '192.0.2.0/28'));
    assert.ok(allowed < PROPAGATION_BOUND_MS, `allow took ${Math.round(allowed)} ms`);
    assert.ok(revoked < PROPAGATION_BOUND_MS, `revoke took ${Math.round(revoked)} ms`);
  });

  it('a change made with plain SQL', async () => {
    const key = await issueKey('1001');
    await timeUntilAll(request('1001', key.apiKey), 'allow', async () => {});
    const revoked = await timeUntilAll(request('1001', key.apiKey), 102, () =>
      sql.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.keyId]),
    );
    assert.ok(revoked < PROPAGATION_BOUND_MS, `SQL revocation took ${Math.round(revoked)} ms`);
  });
});
