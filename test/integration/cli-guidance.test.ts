import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { COMMANDS } from '../../src/cli/commands.js';
import { SETTINGS } from '../../src/config.js';
import { freePort } from '../../src/embedded/embedded-postgres.js';
import { insertSite } from '../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { eventually } from '../support/eventually.js';
import { runCli, startService, type RunningService } from '../support/service.js';

const KEY = randomUUID();

/** A CLI that says what to type: every command, every mistake an operator makes on a support call. */
describe('the CLI says what to type', () => {
  let database: TestDatabase;
  const cli = (...args: string[]) => runCli(database.url, args);

  before(async () => {
    database = await freshDatabase();
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    await insertSite(sql, { id: '1001', keys: [{ key: KEY }], cidrs: ['203.0.113.0/24'] });
    await sql.end();
  });

  after(async () => {
    await database?.drop();
  });

  it('gives every command an example in its --help, serve every setting of the schema but the issuer\'s, and issuer its own', async () => {
    for (const command of COMMANDS) assert.ok(command.example !== undefined, `${command.name} has no example`);
    for (const command of COMMANDS.filter((one) => Object.keys(one.options).length > 0 || one.arity[1] > 0)) {
      assert.ok(command.rules !== undefined, `${command.name} takes arguments but says no rules`);
    }
    const serve = await cli('serve', '--help');
    for (const setting of SETTINGS.filter((one) => !one.name.startsWith('ISSUER_'))) assert.match(serve.stdout, new RegExp(`^  ${setting.name}  \\(default: `, 'm'), setting.name);
    const issuer = await cli('issuer', '--help');
    for (const setting of SETTINGS.filter((one) => one.name.startsWith('ISSUER_') || one.name === 'DATABASE_URL')) {
      assert.match(issuer.stdout, new RegExp(`^  ${setting.name}  \\(default: `, 'm'), setting.name);
    }
    assert.doesNotMatch(serve.stdout, /ISSUER_PORT/);
    const brownout = await cli('brownout', 'add', '--help');
    assert.match(brownout.stdout, /--from ISO\|now\n +when it starts: now/);
    assert.match(brownout.stdout, /Example:\n {2}sitekey-authz brownout add --from/);
  });

  it("keeps Node's hint for a value that starts with a dash", async () => {
    const result = await cli('explain', '--authorization', `-5:${KEY}`);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--authorization reads -5:\*{5}\S{5} as another option; to give a value that starts with a dash, write --authorization=-5:\*{5}/);
    assert.doesNotMatch(result.stderr, new RegExp(KEY), 'the key is masked');
    const written = await cli('explain', `--authorization=-5:${KEY}`, '--ip', '203.0.113.7');
    assert.equal(written.code, 1, written.stderr);
    assert.match(written.stdout, /HEADER_INVALID/);
  });

  it('says an address is invalid instead of explaining a 103', async () => {
    const result = await cli('explain', '--authorization', `1001:${KEY}`, '--ip', '999.1.1.1');
    assert.equal(result.code, 2);
    assert.equal(result.stderr.trim().split('\n').length, 1);
    assert.match(result.stderr, /--ip "999\.1\.1\.1" is not a valid IPv4 or IPv6 address; try --ip 203\.0\.113\.7/);
  });

  it('says in one line that no service is listening', async () => {
    const port = await freePort();
    const result = await runCli(database.url, ['check', '--authorization', `1001:${KEY}`], undefined, { GRPC_PORT: String(port) });
    assert.equal(result.code, 2);
    assert.equal(result.stdout.trim(), `NO VERDICT  no service is listening at localhost:${port}: start it with \`make run\` or \`sitekey-authz serve\`, or name it with --target HOST:PORT (a changed GRPC_PORT must be exported in this terminal too)`);
  });

  it('starts a brownout now with --from now', async () => {
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const before = Date.now();
    const result = await cli('brownout', 'add', '--from', 'now', '--until', until, '--dry-run', '--json');
    assert.equal(result.code, 0, result.stderr);
    const from = Date.parse((JSON.parse(result.stdout) as { from: string }).from);
    assert.ok(from >= before - 1_000 && from <= Date.now(), `from ${from}`);
  });

  it('refuses to import the nil or max UUID as a key', async () => {
    for (const key of ['00000000-0000-0000-0000-000000000000', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF']) {
      const result = await runCli(database.url, ['key', 'import', '1001'], `${key}\n`);
      assert.equal(result.code, 2, key);
      assert.match(result.stderr, /UUID, a placeholder anyone would guess, not a key/);
    }
  });

  describe('report denials', () => {
    let service: RunningService;
    before(async () => {
      service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', LAST_USED_FLUSH_SECONDS: '1' });
    });
    after(async () => {
      await service?.stop();
    });

    it('counts refusals of unknown sites together, and says so when --site names no site', async () => {
      const client = authorizationClient(service.grpcTarget);
      for (const site of ['4242', '4243', '1']) {
        const key = randomUUID();
        assert.equal(verdict(await check(client, { authorization: `${site}:${key}`, body: JSON.stringify({ siteid: Number(site), apikey: key }) })), 101);
      }
      client.close();
      type Row = { siteId: string | null; errorId: number; clientIp: string; count: number };
      const rows = await eventually(
        'the refusals reached the report',
        async () => JSON.parse((await cli('report', 'denials', '--json')).stdout) as Row[],
        (found) => found.some((row) => row.errorId === 101 && row.count >= 3),
        5_000,
      );
      assert.deepEqual(rows.map(({ siteId, errorId, clientIp }) => ({ siteId, errorId, clientIp })), [{ siteId: null, errorId: 101, clientIp: 'any' }]);
      assert.match((await cli('report', 'denials')).stdout, /unknown \(all\) +101 +any/);
      const unknown = await cli('report', 'denials', '--site', '4242');
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /site 4242 does not exist; .* counted with every unknown site; .*`sitekey-authz report denials` without --site/);
    });
  });
});
