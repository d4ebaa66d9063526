import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { hashApiKey } from '../../src/decision/api-key.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict, type CheckArguments, type UpstreamCheckResponse } from '../support/envoy-client.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const UNKNOWN_KEY = '00000000-0000-4000-8000-0000000fedcb';
const EXPIRED_KEY = 'e0e0e0e0-0000-4000-8000-0000000e0e0e';
const ALLOWED_IP = '203.0.113.7';
const OUTSIDE_IP = '198.51.100.9';

type Client = ReturnType<typeof authorizationClient>;

/** 'allow', or the error id and message of the JSON body a partner would get. */
async function answer(client: Client, args: CheckArguments): Promise<'allow' | [number, string]> {
  const response: UpstreamCheckResponse = await check(client, args);
  if (verdict(response) === 'allow') return 'allow';
  const { error } = JSON.parse(response.denied_response?.body ?? '{}') as { error: { id: number; message: string } };
  return [error.id, error.message];
}

const credentials = (key: string, body: Record<string, unknown> = { siteid: 1001, apikey: key }): CheckArguments => ({
  authorization: `1001:${key}`,
  body: JSON.stringify(body),
});

/** Requests of every kind that `serve` answers, sent through a real serve process on a real PostgreSQL, as Envoy sends them. */
describe('sitekey-authz serve answers what reaches it through Envoy', () => {
  let database: TestDatabase;
  let sql: pg.Client;
  let key: string;
  /** A valid key that is only ever refused: its last use must stay unrecorded. */
  let refusedKey: string;
  /** Used once, after refusedKey's denials: its recorded last use shows a flush came after them. */
  let signalKey: string;

  const issue = async (...extra: string[]): Promise<string> => {
    const issued = await runCli(database.url, ['key', 'issue', '1001', '--json', ...extra]);
    assert.equal(issued.code, 0, issued.stderr);
    return (JSON.parse(issued.stdout) as { apiKey: string }).apiKey;
  };
  const lastUsed = async (apiKey: string): Promise<Date | null> => {
    const { rows } = await sql.query<{ last_used_at: Date | null }>('SELECT last_used_at FROM api_keys WHERE key_sha256 = $1', [
      Buffer.from(hashApiKey(apiKey), 'hex'),
    ]);
    assert.equal(rows.length, 1);
    return rows[0]?.last_used_at ?? null;
  };

  before(async () => {
    database = await freshDatabase();
    for (const args of [
      ['site', 'add', '1001'],
      // IPv4 only: an IPv4-mapped client must match it as IPv4.
      ['ip', 'allow', '1001', '203.0.113.0/24'],
    ]) {
      const result = await runCli(database.url, args);
      assert.equal(result.code, 0, result.stderr);
    }
    key = await issue();
    refusedKey = await issue();
    signalKey = await issue();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    // The CLI refuses an expiry in the past; an operator's SQL does not.
    await sql.query("INSERT INTO api_keys (site_id, key_sha256, last_five, expires_at) VALUES (1001, $1, $2, now() - interval '1 minute')", [
      Buffer.from(hashApiKey(EXPIRED_KEY), 'hex'),
      EXPIRED_KEY.slice(-5),
    ]);
  });

  after(async () => {
    await sql?.end();
    await database?.drop();
  });

  describe('with the client IP from the peer address (CLIENT_IP_SOURCE=peer)', () => {
    let service: RunningService;
    let client: Client;

    before(async () => {
      // debug: allowed checks are logged too, so every kind of line is checked for the key below.
      service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', LAST_USED_FLUSH_SECONDS: '1', LOG_LEVEL: 'debug' });
      client = authorizationClient(service.grpcTarget);
    });

    after(async () => {
      client?.close();
      await service?.stop();
    });

    it('allows valid credentials (the baseline every case below differs from by one thing)', async () => {
      assert.equal(await answer(client, { ...credentials(key), ip: ALLOWED_IP }), 'allow');
    });

    it('refuses a body that Envoy marks partial (x-envoy-auth-partial-body: true) with 104, though its credentials match', async () => {
      const partial = { ...credentials(key), ip: ALLOWED_IP, headers: { 'x-envoy-auth-partial-body': 'true' } };
      assert.deepEqual(await answer(client, partial), [104, 'Request body was truncated before authorization, so siteid and apikey cannot be verified']);
      assert.equal(await answer(client, { ...partial, headers: { 'x-envoy-auth-partial-body': 'false' } }), 'allow');
    });

    it('refuses a key whose expiry has passed with 102', async () => {
      assert.deepEqual(await answer(client, { ...credentials(EXPIRED_KEY), ip: ALLOWED_IP }), [102, 'API key *****e0e0e is invalid']);
    });

    it('refuses a key from the instant it expires, with no change in the database', async () => {
      const expiresAt = new Date(Math.ceil(Date.now() / 1000) * 1000 + 8_000);
      const expiring = await issue('--expires', expiresAt.toISOString().replace('.000Z', 'Z'));
      const request = { ...credentials(expiring), ip: ALLOWED_IP };
      // Issued while serve runs: it arrives by notification, well before it expires.
      while ((await answer(client, request)) !== 'allow') {
        assert.ok(Date.now() < expiresAt.getTime(), 'the new key was never allowed before its expiry');
        await sleep(50);
      }
      await sleep(Math.max(0, expiresAt.getTime() - Date.now() + 50));
      assert.deepEqual(await answer(client, request), [102, `API key *****${expiring.slice(-5)} is invalid`]);
    });

    it('matches an IPv4-mapped client (::ffff:a.b.c.d) against the IPv4 allowlist, and names it as IPv4', async () => {
      assert.equal(await answer(client, { ...credentials(key), ip: `::ffff:${ALLOWED_IP}` }), 'allow');
      assert.deepEqual(await answer(client, { ...credentials(key), ip: `::ffff:${OUTSIDE_IP}` }), [
        103,
        `IP address ${OUTSIDE_IP} is not whitelisted for site ID 1001`,
      ]);
    });

    it('checks the allowlist before the key: an unknown key from outside the allowlist learns nothing about it (103)', async () => {
      assert.deepEqual(await answer(client, { ...credentials(UNKNOWN_KEY), ip: OUTSIDE_IP }), [103, `IP address ${OUTSIDE_IP} is not whitelisted for site ID 1001`]);
      assert.deepEqual(await answer(client, { ...credentials(UNKNOWN_KEY), ip: ALLOWED_IP }), [102, 'API key *****fedcb is invalid']);
    });

    it('compares the key case-insensitively, in the header and in the body', async () => {
      const upper = key.toUpperCase();
      assert.equal(await answer(client, { ...credentials(key, { siteid: 1001, apikey: upper }), ip: ALLOWED_IP }), 'allow');
      assert.equal(await answer(client, { ...credentials(upper, { siteid: 1001, apikey: key }), ip: ALLOWED_IP }), 'allow');
    });

    it('refuses a second siteid or apikey that differs only in letter case (104), as an upstream that ignores case would read it', async () => {
      const twice = (body: string): CheckArguments => ({ authorization: `1001:${key}`, body, ip: ALLOWED_IP });
      assert.deepEqual(await answer(client, twice(`{"siteid":1001,"apikey":"${key}","SiteID":1002}`)), [104, 'Request body has more than one siteid']);
      assert.deepEqual(await answer(client, twice(`{"APIKEY":"${UNKNOWN_KEY}","siteid":1001,"apikey":"${key}"}`)), [104, 'Request body has more than one apikey']);
    });

    it('records no last use for a valid key whose checks were denied', async () => {
      assert.deepEqual(await answer(client, { ...credentials(refusedKey), ip: OUTSIDE_IP }), [103, `IP address ${OUTSIDE_IP} is not whitelisted for site ID 1001`]);
      assert.deepEqual(await answer(client, { ...credentials(refusedKey, { siteid: 1001, apikey: key }), ip: ALLOWED_IP }), [
        104,
        'Request body apikey does not match the API key in the Authorization header',
      ]);
      // An allowed check after the denials: once its last use is written, so is anything recorded before it.
      assert.equal(await lastUsed(signalKey), null);
      assert.equal(await answer(client, { ...credentials(signalKey), ip: ALLOWED_IP }), 'allow');
      const deadline = Date.now() + 15_000;
      while ((await lastUsed(signalKey)) === null) {
        assert.ok(Date.now() < deadline, 'the allowed check was never recorded as a last use');
        await sleep(100);
      }
      assert.equal(await lastUsed(refusedKey), null, 'a denied check was recorded as a last use');
    });

    it('never logs a key, at debug, in any spelling', () => {
      const output = service.output().toLowerCase();
      assert.match(output, /"event":"check.allowed"/, 'debug logs allowed checks');
      for (const secret of [key, refusedKey, signalKey, UNKNOWN_KEY, EXPIRED_KEY]) {
        for (const spelling of [secret, secret.replaceAll('-', '')]) assert.ok(!output.includes(spelling.toLowerCase()), `${spelling.slice(0, 8)}… reached the log`);
      }
    });
  });

  describe('behind one trusted proxy (CLIENT_IP_SOURCE=xff, XFF_TRUSTED_HOPS=1)', () => {
    let service: RunningService;
    let client: Client;

    before(async () => {
      service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', CLIENT_IP_SOURCE: 'xff', XFF_TRUSTED_HOPS: '1' });
      client = authorizationClient(service.grpcTarget);
    });

    after(async () => {
      client?.close();
      await service?.stop();
    });

    // Envoy appended the peer (our proxy, 10.0.0.1); one trusted hop skips it and takes the next from the right.
    const behindProxy = (forwardedFor: string, requestId = 'req-xff'): CheckArguments => ({
      ...credentials(key),
      ip: '10.0.0.1',
      headers: { 'x-forwarded-for': forwardedFor, 'x-request-id': requestId },
    });

    it('takes the client one hop from the right, not the peer and not the leftmost entry a client wrote', async () => {
      assert.equal(await answer(client, behindProxy(`${OUTSIDE_IP}, ${ALLOWED_IP}, 10.0.0.1`)), 'allow');
      assert.deepEqual(await answer(client, behindProxy(`${ALLOWED_IP}, ${OUTSIDE_IP}, 10.0.0.1`, 'req-xff-103')), [
        103,
        `IP address ${OUTSIDE_IP} is not whitelisted for site ID 1001`,
      ]);
      await sleep(200);
      const line = service
        .output()
        .split('\n')
        .filter((text) => text.startsWith('{'))
        .map((text) => JSON.parse(text) as Record<string, unknown>)
        .find((entry) => entry.requestId === 'req-xff-103');
      assert.equal(line?.clientIp, OUTSIDE_IP, 'the decision log names the address it read from X-Forwarded-For');
    });

    it('refuses a header with too few entries (103, address unknown), even from an allowed peer', async () => {
      assert.deepEqual(await answer(client, { ...behindProxy(ALLOWED_IP), ip: ALLOWED_IP }), [103, 'IP address unknown is not whitelisted for site ID 1001']);
    });
  });

  describe('with the client IP from a header the edge sets (CLIENT_IP_SOURCE=header:x-client-ip)', () => {
    let service: RunningService;
    let client: Client;

    before(async () => {
      service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', CLIENT_IP_SOURCE: 'header:x-client-ip' });
      client = authorizationClient(service.grpcTarget);
    });

    after(async () => {
      client?.close();
      await service?.stop();
    });

    it('reads the client from that header alone, not from the peer or X-Forwarded-For', async () => {
      assert.equal(await answer(client, { ...credentials(key), ip: OUTSIDE_IP, headers: { 'x-client-ip': ALLOWED_IP } }), 'allow');
      assert.deepEqual(await answer(client, { ...credentials(key), ip: ALLOWED_IP, headers: { 'x-client-ip': OUTSIDE_IP, 'x-forwarded-for': ALLOWED_IP } }), [
        103,
        `IP address ${OUTSIDE_IP} is not whitelisted for site ID 1001`,
      ]);
    });

    it('refuses a request without the header (103, address unknown), even from an allowed peer', async () => {
      assert.deepEqual(await answer(client, { ...credentials(key), ip: ALLOWED_IP }), [103, 'IP address unknown is not whitelisted for site ID 1001']);
    });
  });
});
