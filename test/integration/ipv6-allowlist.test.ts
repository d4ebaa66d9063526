import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { runCli, startService, type RunningService } from '../support/service.js';

/** An IPv6 allowlist entry that covers ::ffff:0:0/96 must not admit IPv4 clients, end to end. */
describe('an IPv6-only allowlist, through the CLI and serve', () => {
  let database: TestDatabase;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;
  let key: string;

  const cli = async (...args: string[]) => {
    const result = await runCli(database.url, args);
    assert.equal(result.code, 0, result.stderr);
    return result;
  };
  const verdictFrom = async (ip: string) =>
    verdict(await check(client, { authorization: `1001:${key}`, ip, body: JSON.stringify({ siteid: 1001, apikey: key }) }));

  before(async () => {
    database = await freshDatabase();
    await cli('site', 'add', '1001');
    const allowed = await cli('ip', 'allow', '1001', '::/0', '::/80', '--allow-any-address');
    assert.match(allowed.stderr, /warning: ::\/0 does not admit IPv4 clients/);
    key = (JSON.parse((await cli('key', 'issue', '1001', '--json')).stdout) as { apiKey: string }).apiKey;
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false' });
    client = authorizationClient(service.grpcTarget);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await database?.drop();
  });

  it('refuses IPv4 clients, mapped or not, with 103, and admits IPv6 clients', async () => {
    const refused = await check(client, { authorization: `1001:${key}`, ip: '::ffff:203.0.113.7', body: JSON.stringify({ siteid: 1001, apikey: key }) });
    assert.equal(refused.denied_response?.body, JSON.stringify({ error: { id: 103, message: 'IP address 203.0.113.7 is not whitelisted for site ID 1001' } }));
    assert.equal(await verdictFrom('203.0.113.7'), 103);
    assert.equal(await verdictFrom('2001:db8::7'), 'allow');
  });

  it('admits IPv4 clients once their IPv4 network is added, as the warning says', async () => {
    await cli('ip', 'allow', '1001', '203.0.113.0/24');
    const deadline = Date.now() + 5_000;
    while ((await verdictFrom('::ffff:203.0.113.7')) !== 'allow' && Date.now() < deadline) await sleep(50);
    assert.equal(await verdictFrom('::ffff:203.0.113.7'), 'allow');
    assert.equal(await verdictFrom('203.0.113.7'), 'allow');
    assert.equal(await verdictFrom('198.51.100.7'), 103);
  });
});
