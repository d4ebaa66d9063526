import assert from 'node:assert/strict';
import { userInfo } from 'node:os';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { EXIT_USAGE } from '../../../src/cli/command.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { runCli } from '../../support/service.js';

const NAME_YOURSELF = /name yourself for the audit log: --actor alice@example.com, or set SITEKEY_ACTOR=alice@example.com/;
const AS_ROOT = process.getuid?.() === 0;

/** Who the audit log names for a change made with the CLI, and the refusal where the OS user names nobody. */
describe('the actor of a CLI change', () => {
  let database: TestDatabase;
  let sql: pg.Client;
  /** The CLI with no SITEKEY_ACTOR, unless `env` gives one. */
  const cli = (args: string[], env: Record<string, string> = {}) => runCli(database.url, args, undefined, { SITEKEY_ACTOR: '', ...env });
  const actorOf = async (siteId: string) =>
    (await sql.query<{ actor: string }>("SELECT actor FROM audit_log WHERE site_id = $1 AND action = 'site.add'", [siteId])).rows.map((row) => row.actor);
  const siteExists = async (siteId: string) => (await sql.query('SELECT 1 FROM sites WHERE id = $1', [siteId])).rowCount === 1;

  before(async () => {
    database = await freshDatabase();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    assert.equal((await cli(['migrate'])).code, 0, 'migrate runs without an actor: it writes no audit row');
  });

  after(async () => {
    await sql?.end();
    await database?.drop();
  });

  it('takes --actor, else SITEKEY_ACTOR, and --actor wins', async () => {
    assert.equal((await cli(['site', 'add', '7001', '--actor', 'alice@example.com'])).code, 0);
    assert.equal((await cli(['site', 'add', '7002'], { SITEKEY_ACTOR: 'carol@example.com' })).code, 0);
    assert.equal((await cli(['site', 'add', '7003', '--actor', 'alice@example.com'], { SITEKEY_ACTOR: 'carol@example.com' })).code, 0);
    assert.deepEqual([await actorOf('7001'), await actorOf('7002'), await actorOf('7003')], [['alice@example.com'], ['carol@example.com'], ['alice@example.com']]);
  });

  it('refuses a change in a Kubernetes pod without a name, and changes nothing; reading still works', async () => {
    const pod = { KUBERNETES_SERVICE_HOST: '10.96.0.1' };
    const refused = await cli(['site', 'add', '7004'], pod);
    assert.equal(refused.code, EXIT_USAGE, refused.stderr);
    assert.match(refused.stderr, NAME_YOURSELF);
    assert.match(refused.stderr, /Kubernetes pod/);
    assert.equal(await siteExists('7004'), false);
    const listed = await cli(['site', 'list', '--json'], pod);
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok((JSON.parse(listed.stdout) as Array<{ siteId: string }>).some((site) => site.siteId === '7001'));
    assert.equal((await cli(['site', 'add', '7004'], { ...pod, SITEKEY_ACTOR: 'dave@example.com' })).code, 0);
    assert.deepEqual(await actorOf('7004'), ['dave@example.com']);
  });

  it('refuses issuing a key without a name, as every change', async () => {
    const refused = await cli(['key', 'issue', '7001'], { KUBERNETES_SERVICE_HOST: '10.96.0.1' });
    assert.equal(refused.code, EXIT_USAGE);
    assert.match(refused.stderr, NAME_YOURSELF);
    assert.equal((await sql.query("SELECT 1 FROM api_keys WHERE site_id = 7001")).rowCount, 0);
  });

  it('refuses a bad SITEKEY_ACTOR as configuration, naming the variable', async () => {
    const refused = await cli(['site', 'add', '7005'], { SITEKEY_ACTOR: 'a\u001bb' });
    assert.equal(refused.code, EXIT_USAGE);
    assert.match(refused.stderr, /SITEKEY_ACTOR: who makes the change must not contain control characters/);
  });

  it('as root: refuses a change without a name, with the words that say how to give one', { skip: !AS_ROOT && 'not running as root' }, async () => {
    const refused = await cli(['site', 'add', '7006']);
    assert.equal(refused.code, EXIT_USAGE, refused.stderr);
    assert.match(refused.stderr, /runs as root/);
    assert.match(refused.stderr, NAME_YOURSELF);
    assert.equal(await siteExists('7006'), false);
    assert.equal((await cli(['key', 'list', '7001'])).code, 0, 'a read needs no name');
  });

  it('as a person: audits the OS user when no name is given', { skip: AS_ROOT && 'running as root' }, async () => {
    assert.equal((await cli(['site', 'add', '7007'])).code, 0);
    assert.deepEqual(await actorOf('7007'), [userInfo().username]);
  });
});
