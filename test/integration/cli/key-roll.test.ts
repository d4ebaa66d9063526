import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { EXIT_FAILED, EXIT_USAGE } from '../../../src/cli/command.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { authorizationClient, check, verdict } from '../../support/envoy-client.js';
import { eventually } from '../../support/eventually.js';
import { runCli, startService, TEST_ACTOR, type RunningService } from '../../support/service.js';

interface RolledKey {
  readonly apiKey: string;
  readonly keyId: string;
  readonly maskedKey: string;
  readonly expiresAt: string | null;
  readonly replaced: { readonly keyId: string; readonly expiresAt: string };
}

const DAY_MS = 86_400_000;

/** `key roll`: a new key that a real Check accepts, and the old one accepted until the end it was given, then refused. */
describe('sitekey-authz key roll', () => {
  let database: TestDatabase;
  let sql: pg.Client;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;
  const cli = (...args: string[]) => runCli(database.url, args);
  const ok = async (...args: string[]) => {
    const result = await cli(...args);
    assert.equal(result.code, 0, result.stderr);
    return result;
  };
  const issue = async (...options: string[]) => JSON.parse((await ok('key', 'issue', '1001', '--json', ...options)).stdout) as { apiKey: string; keyId: string };
  const request = (key: string) => ({ authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) });

  before(async () => {
    database = await freshDatabase();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    await ok('site', 'add', '1001', '--name', 'Acme Travel');
    await ok('ip', 'allow', '1001', '203.0.113.0/24');
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false' });
    client = authorizationClient(service.grpcTarget);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await sql?.end();
    await database?.drop();
  });

  it('prints the new key once, gives the old key a week, and audits both in one row', async () => {
    const old = await issue('--note', 'production');
    const result = await ok('key', 'roll', '1001', old.keyId, '--note', 'production, rolled');
    const printed = /^ {2}([0-9a-f-]{36})$/m.exec(result.stdout)?.[1];
    assert.ok(printed, `the new key is printed on a line of its own:\n${result.stdout}`);
    assert.match(result.stdout, new RegExp(`replacing key ${old.keyId} \\(\\*{5}${old.apiKey.slice(-5)}\\), which keeps working until `));
    assert.match(result.stdout, /This is the only time the key is shown/);

    const { rows } = await sql.query<{ actor: string; details: Record<string, any> }>("SELECT actor, details FROM audit_log WHERE action = 'key.roll'");
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.actor, TEST_ACTOR);
    assert.equal(rows[0]?.details['replaced'].keyId, old.keyId);
    assert.equal(rows[0]?.details['note'], 'production, rolled');
    assert.doesNotMatch(JSON.stringify(rows), new RegExp(`${printed}|${old.apiKey}`), 'no full key in the audit log');
    const ends = Date.parse(rows[0]?.details['replaced'].expiresAt as string);
    assert.ok(ends - Date.now() > 6.9 * DAY_MS && ends - Date.now() <= 7 * DAY_MS, 'the old key ends a week from now');

    await eventually('the new key to be accepted', async () => verdict(await check(client, request(printed))), (answer) => answer === 'allow', 5_000);
    assert.equal(verdict(await check(client, request(old.apiKey))), 'allow', 'the old key works until its end');
    await sql.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [old.keyId]);
    await eventually('the old key to be refused after its end', async () => verdict(await check(client, request(old.apiKey))), (answer) => answer === 102, 5_000);
    assert.equal(verdict(await check(client, request(printed))), 'allow');
  });

  it('takes --old-expires and --expires, and with --json answers the new key and the old one', async () => {
    const old = await issue();
    const rolled = JSON.parse((await ok('key', 'roll', '1001', old.keyId, '--old-expires', '2099-01-31', '--expires', '2099-06-30', '--json')).stdout) as RolledKey;
    assert.equal(rolled.replaced.keyId, old.keyId);
    assert.equal(rolled.replaced.expiresAt, '2099-01-31T00:00:00.000Z');
    assert.equal(rolled.expiresAt, '2099-06-30T00:00:00.000Z');
    assert.equal(rolled.maskedKey, `*****${rolled.apiKey.slice(-5)}`);
  });

  it('keeps the sooner end of an old key, and says so', async () => {
    const soon = new Date(Date.now() + 2 * DAY_MS).toISOString();
    const old = await issue('--expires', soon);
    const result = await ok('key', 'roll', '1001', old.keyId, '--json');
    assert.equal((JSON.parse(result.stdout) as RolledKey).replaced.expiresAt, soon);
    assert.match(result.stderr, new RegExp(`warning: the old key ${old.keyId} .* already expires sooner, at ${soon}, and keeps that expiry`));
  });

  it('refuses a key that is not active, one of another site, and an end in the past, changing nothing', async () => {
    const revoked = await issue();
    await ok('key', 'revoke', '1001', revoked.keyId);
    const keysBefore = (await sql.query('SELECT count(*)::int AS n FROM api_keys')).rows[0].n as number;
    const notActive = await cli('key', 'roll', '1001', revoked.keyId);
    assert.equal(notActive.code, EXIT_FAILED);
    assert.match(notActive.stderr, new RegExp(`key ${revoked.keyId} of site 1001 is revoked: only an active key can be rolled`));
    const elsewhere = await cli('key', 'roll', '1002', revoked.keyId);
    assert.equal(elsewhere.code, EXIT_FAILED);
    const past = await cli('key', 'roll', '1001', revoked.keyId, '--old-expires', '2001-01-01');
    assert.equal(past.code, EXIT_USAGE);
    assert.match(past.stderr, /--old-expires: 2001-01-01 is in the past/);
    assert.equal((await sql.query('SELECT count(*)::int AS n FROM api_keys')).rows[0].n, keysBefore, 'no key was issued');
  });
});
