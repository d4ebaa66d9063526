import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { runCli } from '../support/service.js';

interface Entry {
  readonly actor: string;
  readonly action: string;
  readonly siteId: string | null;
  readonly details: Record<string, unknown>;
}

/** `sitekey-authz audit list`: the audit trail without psql. */
describe('audit list', () => {
  let database: TestDatabase;
  const cli = (...args: string[]) => runCli(database.url, args);
  async function entries(...args: string[]): Promise<Entry[]> {
    const result = await cli('audit', 'list', '--json', ...args);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as Entry[];
  }

  before(async () => {
    database = await freshDatabase();
    for (const args of [
      ['site', 'add', '1001', '--actor', 'alice'],
      ['site', 'add', '1002', '--actor', 'bob'],
      ['ip', 'allow', '1001', '203.0.113.0/24', '--actor', 'alice'],
      ['key', 'issue', '1001', '--actor', 'alice'],
      ['site', 'disable', '1002', '--actor', 'bob'],
      ['sunset', 'set', '--enforce', '--actor', 'carol'],
    ]) {
      const result = await cli(...args);
      assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    }
  });

  after(async () => {
    await database?.drop();
  });

  it('lists every change newest first, with who made it', async () => {
    const all = await entries();
    assert.deepEqual(
      all.map((entry) => [entry.actor, entry.action, entry.siteId]),
      [
        ['carol', 'sunset.set', null],
        ['bob', 'site.disable', '1002'],
        ['alice', 'key.issue', '1001'],
        ['alice', 'ip.allow', '1001'],
        ['bob', 'site.add', '1002'],
        ['alice', 'site.add', '1001'],
      ],
    );
    assert.doesNotMatch(JSON.stringify(all), /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/, 'no full key in the trail');
    const shown = await cli('audit', 'list');
    assert.match(shown.stdout, /^AT +BY +SUBJECT +VERIFIED E-MAIL +ACTION +SITE +WHAT\n.* CLI +carol +- +sunset\.set +- +changed the API-key sunset from .+ to .+, enforced, no migration guide\n/);
  });

  it('filters by site, action or group, and bounds the output', async () => {
    assert.deepEqual((await entries('--site', '1002')).map((entry) => entry.action), ['site.disable', 'site.add']);
    assert.deepEqual((await entries('--action', 'site.add')).map((entry) => entry.siteId), ['1002', '1001']);
    assert.deepEqual((await entries('--action', 'site')).map((entry) => entry.action), ['site.disable', 'site.add', 'site.add']);
    const limited = await cli('audit', 'list', '--limit', '2', '--json');
    assert.equal((JSON.parse(limited.stdout) as Entry[]).length, 2);
    assert.match(limited.stderr, /showing the newest 2; older changes were left out: give --limit 20/);
  });

  it('reads only the days asked for', async () => {
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    await sql.query("INSERT INTO audit_log (at, actor, action, site_id, details) VALUES (now() - interval '10 days', $1, 'site.enable', 1002, '{}')", ['dave\u001b[2J']);
    await sql.end();
    assert.equal((await entries('--since', '7')).some((entry) => entry.action === 'site.enable'), false);
    const older = await cli('audit', 'list', '--since', '11', '--action', 'site.enable');
    assert.match(older.stdout, /as recorded +"dave\\u001b\[2J" +- +site\.enable +1002/);
  });

  it('says what to type for a bad option', async () => {
    for (const [args, said] of [
      [['--since', 'week'], /--since: "week" is not a number of days from 1 to 3650, e\.g\. --since 30/],
      [['--action', 'DROP TABLE'], /--action: "DROP TABLE" is not an action name; .*, e\.g\. --action key\.revoke or --action key/],
      [['--limit', '0'], /--limit: "0" is not a number of entries from 1 to 10000/],
      [['--site', '01'], /"01" is not a site id/],
    ] as const) {
      const result = await cli('audit', 'list', ...args);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, said);
    }
  });
});
