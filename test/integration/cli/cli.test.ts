import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { COMMANDS } from '../../../src/cli/commands.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { freePort } from '../../../src/embedded/embedded-postgres.js';
import { freshDatabase, shippedMigrations, type TestDatabase } from '../../support/database.js';
import { CLI, runCli, TEST_ACTOR, type CliResult } from '../../support/service.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const USAGE = 2;
const FAILED = 1;

/** Every `sitekey-authz` admin command, run as a real process against a real PostgreSQL. */
describe('sitekey-authz CLI', () => {
  let database: TestDatabase;
  let sql: pg.Client;

  const cli = (...args: string[]) => runCli(database.url, args);
  const json = <T>(result: CliResult): T => {
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as T;
  };
  function refused(result: CliResult, exit: number, message: RegExp): void {
    assert.equal(result.code, exit, `exit code; stderr: ${result.stderr}`);
    assert.match(result.stderr, message);
    assert.equal(result.stdout, '');
  }
  async function auditActions(siteId: string): Promise<Array<{ actor: string; action: string; details: Record<string, unknown> }>> {
    const { rows } = await sql.query('SELECT actor, action, details FROM audit_log WHERE site_id = $1 ORDER BY id', [siteId]);
    return rows as Array<{ actor: string; action: string; details: Record<string, unknown> }>;
  }

  before(async () => {
    database = await freshDatabase();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
  });

  after(async () => {
    await sql?.end();
    await database?.drop();
  });

  describe('site', () => {
    it('adds a site, says what to do next, and records who did it', async () => {
      const added = await cli('site', 'add', '1001', '--name', 'Acme Travel', '--actor', 'alice@accounts');
      assert.equal(added.code, 0, added.stderr);
      assert.match(added.stdout, /added site 1001 "Acme Travel", enabled/);
      assert.match(added.stdout, /sitekey-authz key issue 1001/);
      assert.deepEqual(await auditActions('1001'), [{ actor: 'alice@accounts', action: 'site.add', details: { name: 'Acme Travel' } }]);
    });

    it('refuses a site that exists, and a malformed id, saying what to type instead', async () => {
      refused(await cli('site', 'add', '1001'), FAILED, /site 1001 already exists; see it with `sitekey-authz site list`/);
      refused(await cli('site', 'add', '01001'), USAGE, /"01001" is not a site id: .* e\.g\. 1001/);
      refused(await cli('site', 'add', '9223372036854775808'), USAGE, /is not a site id/);
      refused(await cli('site', 'add', '1002', 'Acme', 'Travel'), USAGE, /does not take "Acme" "Travel" \(quote a value with spaces: --name "…"\)/);
      refused(await cli('site', 'add', '1002', '--nmae', 'x'), USAGE, /"site add" has no option --nmae; it takes --name/);
      refused(await cli('site', 'add'), USAGE, /"site add" is missing arguments; usage: sitekey-authz site add <id> \[--name N\]/);
    });

    it('tells how to give a client id that starts with a dash, and takes it after --', async () => {
      refused(await cli('token-client', 'remove', '-qXyz0'), USAGE, /If -qXyz0 is an argument \(a client id that starts with a dash\), write -- before it: sitekey-authz token-client remove -- -qXyz0/);
      refused(await cli('token-client', 'remove', '--', '-qXyz0'), FAILED, /token client -qXyz0 is not registered/);
    });

    it('lists sites with their state and counts, as a table and as JSON', async () => {
      const added = json<{ siteId: string; enabled: boolean }>(await cli('site', 'add', '9223372036854775807', '--json'));
      assert.deepEqual({ siteId: added.siteId, enabled: added.enabled }, { siteId: '9223372036854775807', enabled: true });
      const list = await cli('site', 'list');
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /^SITE ID +STATE +ACTIVE KEYS +ALLOWLIST +CREATED +NAME$/m);
      assert.match(list.stdout, /^1001 +enabled +0 +0 +\S+ \S+ +Acme Travel$/m);
      const sites = json<Array<{ siteId: string; name: string; activeKeys: number; allowlistEntries: number }>>(await cli('site', 'list', '--json'));
      assert.deepEqual(sites.map((site) => site.siteId), ['1001', '9223372036854775807']);
    });

    it('disables and enables a site, idempotently, auditing only real changes', async () => {
      await cli('site', 'add', '2001');
      const disabled = await cli('site', 'disable', '2001');
      assert.match(disabled.stdout, /disabled site 2001: its requests are refused \(101\)/);
      assert.match((await cli('site', 'disable', '2001')).stdout, /site 2001 was already disabled/);
      assert.equal(json<{ enabled: boolean; changed: boolean }>(await cli('site', 'enable', '2001', '--json')).changed, true);
      const { rows } = await sql.query('SELECT enabled FROM sites WHERE id = 2001');
      assert.equal(rows[0].enabled, true);
      assert.deepEqual((await auditActions('2001')).map((row) => row.action), ['site.add', 'site.disable', 'site.enable']);
      refused(await cli('site', 'disable', '4242'), FAILED, /site 4242 does not exist; add it with `sitekey-authz site add 4242`/);
    });
  });

  describe('key', () => {
    before(async () => {
      await cli('site', 'add', '3001');
      await cli('site', 'add', '3002');
    });

    it('issues a random UUID key, shows it once, and stores only its SHA-256 and last five characters', async () => {
      const issued = await cli('key', 'issue', '3001', '--note', 'production', '--expires', '2099-01-01');
      assert.equal(issued.code, 0, issued.stderr);
      const key = /^ {2}([0-9a-f-]{36})$/m.exec(issued.stdout)?.[1] ?? '';
      assert.match(key, UUID_V4);
      assert.match(issued.stdout, /only time the key is shown/);
      assert.match(issued.stderr, /warning: site 3001 has no allowlist entry yet: every request is refused \(103\)/);
      const { rows } = await sql.query(
        "SELECT encode(key_sha256, 'hex') AS hash, last_five, note, expires_at FROM api_keys WHERE site_id = 3001",
      );
      assert.deepEqual(rows.map((row) => ({ ...row, expires_at: (row.expires_at as Date).toISOString() })), [
        { hash: createHash('sha256').update(key).digest('hex'), last_five: key.slice(-5), note: 'production', expires_at: '2099-01-01T00:00:00.000Z' },
      ]);
      const everything = JSON.stringify((await sql.query('SELECT * FROM api_keys')).rows) + JSON.stringify((await sql.query('SELECT * FROM audit_log')).rows);
      assert.ok(!everything.includes(key), 'the key was stored in clear');
    });

    it('prints the key and its id as JSON for scripts', async () => {
      const issued = json<{ apiKey: string; keyId: string; siteId: string; maskedKey: string; status: string }>(await cli('key', 'issue', '3001', '--json'));
      assert.match(issued.apiKey, UUID_V4);
      assert.match(issued.keyId, /^[1-9]\d*$/);
      assert.equal(issued.maskedKey, `*****${issued.apiKey.slice(-5)}`);
      assert.deepEqual([issued.siteId, issued.status], ['3001', 'active']);
    });

    it('refuses bad --expires and --note values before touching the database', async () => {
      refused(await cli('key', 'issue', '3001', '--expires', 'next week'), USAGE, /--expires: "next week" is not an ISO 8601 date.*, e\.g\. --expires 2027-01-31/);
      refused(await cli('key', 'issue', '3001', '--expires', '2001-01-01'), USAGE, /^sitekey-authz: --expires: 2001-01-01 is in the past: a key must expire after it is issued; give a date after today, e\.g\. --expires \d{4}-\d\d-\d\d\n$/);
      refused(await cli('key', 'issue', '3001', '--expires'), USAGE, /--expires.*argument missing/);
      refused(await cli('key', 'issue', '4242'), FAILED, /site 4242 does not exist/);
    });

    it('masks a UUID in a note, a name or an actor before storing it, so no full key is kept or shown', async () => {
      const secret = randomUUID();
      const upper = secret.toUpperCase();
      await cli('site', 'add', '3003', '--name', `Acme ${upper}`, '--actor', `ops ${secret}`);
      const issued = json<{ keyId: string; note: string }>(await cli('key', 'issue', '3003', '--note', `replaces ${secret}`, '--actor', secret, '--json'));
      assert.equal(issued.note, `replaces *****${secret.slice(-5)}`);
      const imported = await runCli(database.url, ['key', 'import', '3003', '--note', `was ${upper}`], '0f0e0d0c-0b0a-4908-8706-050403020101\n');
      assert.equal(imported.code, 0, imported.stderr);
      const shown = [
        (await cli('key', 'list', '3003')).stdout,
        (await cli('key', 'list', '3003', '--json')).stdout,
        (await cli('site', 'list')).stdout,
        (await cli('site', 'list', '--json')).stdout,
      ].join('\n');
      assert.match(shown, new RegExp(`replaces \\*{5}${secret.slice(-5)}`));
      const { rows: notes } = await sql.query('SELECT note FROM api_keys WHERE site_id = 3003 ORDER BY id');
      assert.deepEqual(notes.map((row) => row.note), [`replaces *****${secret.slice(-5)}`, `was *****${upper.slice(-5)}`]);
      const stored = JSON.stringify([
        (await sql.query('SELECT * FROM sites')).rows,
        (await sql.query('SELECT * FROM api_keys')).rows,
        (await sql.query('SELECT actor, details FROM audit_log')).rows,
      ]);
      for (const [where, text] of [['the output', shown], ['the database', stored]] as const) {
        assert.ok(!text.toLowerCase().includes(secret), `a full key reached ${where}`);
      }
      const actors = (await auditActions('3003')).map((row) => row.actor);
      assert.deepEqual(actors.slice(0, 2), [`ops *****${secret.slice(-5)}`, `*****${secret.slice(-5)}`]);
    });

    it('counts names and notes in characters, and refuses direction controls, saying what to type instead', async () => {
      const emoji = '\u{1F600}'.repeat(200);
      const added = json<{ name: string }>(await cli('site', 'add', '3004', '--name', emoji, '--json'));
      assert.equal(added.name, emoji);
      assert.equal((await sql.query('SELECT name FROM sites WHERE id = 3004')).rows[0]?.name, emoji);
      refused(await cli('site', 'add', '3005', '--name', `${emoji}x`), USAGE, /--name is 201 characters long; keep it to 200/);
      const note = '\u{1F511}'.repeat(500);
      assert.equal((await cli('key', 'issue', '3004', '--note', note)).code, 0);
      refused(await cli('key', 'issue', '3004', '--note', `${note}!`), USAGE, /--note is 501 characters long; keep it to 500/);
      for (const [option, mark] of [['--name', '\u202e'], ['--note', '\u2066'], ['--actor', '\u200f'], ['--name', '\u061c']] as const) {
        const args = option === '--note' ? ['key', 'issue', '3004'] : ['site', 'add', '3005'];
        refused(await cli(...args, option, `Acme ${mark}Travel`), USAGE, new RegExp(`${option} must not contain the invisible direction control U\\+${mark.codePointAt(0)?.toString(16).toUpperCase().padStart(4, '0')}.*write the text without it`));
      }
      refused(await cli('site', 'add', '3005', '--name', 'Acme\u0085Travel'), USAGE, /--name must not contain control characters/);
      assert.equal((await sql.query('SELECT 1 FROM sites WHERE id = 3005')).rows.length, 0);
    });

    it('imports a key from standard input, in canonical form, and refuses it twice', async () => {
      const key = 'ABCDEF01-2345-4678-9ABC-DEF012345678';
      const imported = await runCli(database.url, ['key', 'import', '3001', '--note', 'legacy'], `${key}\n`);
      assert.equal(imported.code, 0, imported.stderr);
      assert.match(imported.stdout, /imported key \d+ \(\*{5}45678\) for site 3001/);
      assert.ok(!imported.stdout.includes(key) && !imported.stdout.includes(key.toLowerCase()));
      const { rows } = await sql.query("SELECT encode(key_sha256, 'hex') AS hash FROM api_keys WHERE note = 'legacy'");
      assert.equal(rows[0].hash, createHash('sha256').update(key.toLowerCase()).digest('hex'));
      refused(await runCli(database.url, ['key', 'import', '3002'], key.toLowerCase()), FAILED, /this key is already registered; issue a fresh one/);
      const duplicate = await runCli(database.url, ['key', 'import', '3002', '--json'], key);
      assert.deepEqual(JSON.parse(duplicate.stderr), {
        error: { code: 'KEY_DUPLICATE', field: 'key', message: 'this key is already registered; issue a fresh one with `sitekey-authz key issue 3002`' },
      });
    });

    it('refuses standard input that is not one key, without echoing it', async () => {
      const typo = 'abcdef01-2345-4678-9abc-def01234567';
      const result = await runCli(database.url, ['key', 'import', '3001'], typo);
      refused(result, USAGE, /standard input must hold exactly one API key, .*; got a line that is not a UUID/);
      assert.ok(!result.stderr.includes(typo));
      // Its example must survive the masking of keys in every message, and be plainly no real key.
      assert.match(result.stderr, /a UUID such as xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx; got/);
      refused(await runCli(database.url, ['key', 'import', '3001'], ''), USAGE, /got nothing/);
    });

    it('lists keys masked, with their state and last use', async () => {
      const active = json<{ apiKey: string; keyId: string }>(await cli('key', 'issue', '3002', '--json'));
      const expired = json<{ apiKey: string; keyId: string }>(await cli('key', 'issue', '3002', '--json'));
      const revoked = json<{ apiKey: string; keyId: string }>(await cli('key', 'issue', '3002', '--json'));
      await sql.query("UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1", [expired.keyId]);
      await sql.query("UPDATE api_keys SET last_used_at = '2026-11-20T08:30:00Z' WHERE id = $1", [active.keyId]);
      assert.equal((await cli('key', 'revoke', '3002', revoked.keyId)).code, 0);
      const list = await cli('key', 'list', '3002');
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /^KEY ID +KEY +STATUS +CREATED +EXPIRES +LAST USED +NOTE$/m);
      assert.match(list.stdout, new RegExp(`^${active.keyId} +\\*{5}${active.apiKey.slice(-5)} +active .* never +2026-11-20 08:30Z`, 'm'));
      assert.match(list.stdout, new RegExp(`^${expired.keyId} +\\*{5}${expired.apiKey.slice(-5)} +expired `, 'm'));
      assert.match(list.stdout, new RegExp(`^${revoked.keyId} +\\*{5}${revoked.apiKey.slice(-5)} +revoked `, 'm'));
      for (const key of [active, expired, revoked]) assert.ok(!list.stdout.includes(key.apiKey), 'key list showed a full key');
      const keys = json<Array<{ keyId: string; status: string; lastUsedAt: string | null }>>(await cli('key', 'list', '3002', '--json'));
      assert.deepEqual(keys.map((key) => [key.keyId, key.status]), [[active.keyId, 'active'], [expired.keyId, 'expired'], [revoked.keyId, 'revoked']]);
      assert.equal(keys[0]?.lastUsedAt, '2026-11-20T08:30:00.000Z');
    });

    it('revokes a key of the named site only, idempotently, and audits it masked', async () => {
      const key = json<{ apiKey: string; keyId: string }>(await cli('key', 'issue', '3001', '--json'));
      // Key ids are global: one typed with the wrong site is named with the site it belongs to.
      refused(
        await cli('key', 'revoke', '3002', key.keyId),
        FAILED,
        new RegExp(`key ${key.keyId} belongs to site 3001, not to site 3002; see it with \`sitekey-authz key list 3001\``),
      );
      refused(await cli('key', 'revoke', '3002', '999999'), FAILED, /site 3002 has no key with id 999999; see its keys with `sitekey-authz key list 3002`/);
      const byKey = await cli('key', 'revoke', '3001', key.apiKey, '--json');
      assert.equal(byKey.code, USAGE);
      assert.match(byKey.stderr, /<key-id>: that is an API key, not a key id: expected the number the list of the site's keys shows for the key, e\.g\. 12/);
      assert.ok(!byKey.stderr.includes(key.apiKey), 'the key was echoed');
      const typed = await runCli(database.url, ['key', 'import', '3001', key.apiKey.toUpperCase()]);
      refused(typed, USAGE, /"key import" takes no API key on the command line, where it would stay in shell history; usage: sitekey-authz key import <site>/);
      assert.ok(!typed.stderr.toLowerCase().includes(key.apiKey), 'the key was echoed');
      const unknownSite = await cli('site', 'list', key.apiKey);
      assert.ok(!unknownSite.stderr.includes(key.apiKey) && unknownSite.code === USAGE, unknownSite.stderr);
      const extra = await cli('key', 'revoke', '3001', key.keyId, 'now');
      refused(extra, USAGE, /"key revoke" does not take "now"; usage: sitekey-authz key revoke <site> <key-id>/);
      const revoked = await cli('key', 'revoke', '3001', key.keyId);
      assert.match(revoked.stdout, new RegExp(`revoked key ${key.keyId} \\(\\*{5}${key.apiKey.slice(-5)}\\) of site 3001`));
      assert.match((await cli('key', 'revoke', '3001', key.keyId)).stdout, /was already revoked at \d{4}-/);
      const audit = (await auditActions('3001')).filter((row) => row.action === 'key.revoke');
      assert.deepEqual(audit.map((row) => row.details), [{ keyId: key.keyId, maskedKey: `*****${key.apiKey.slice(-5)}`, before: { status: 'active' }, after: { status: 'revoked' } }]);
    });
  });

  describe('ip', () => {
    before(async () => {
      await cli('site', 'add', '5001');
    });

    it('allows IPv4 and IPv6 networks and single addresses, storing mapped IPv4 as IPv4', async () => {
      const allowed = await cli('ip', 'allow', '5001', '203.0.113.0/24', '2001:db8:42::/48', '198.51.100.7', '::ffff:192.0.2.0/120');
      assert.equal(allowed.code, 0, allowed.stderr);
      assert.match(allowed.stdout, /site 5001 now allows 203\.0\.113\.0\/24, 2001:db8:42::\/48, 198\.51\.100\.7\/32, 192\.0\.2\.0\/24/);
      const again = json<{ added: string[]; alreadyAllowed: string[] }>(await cli('ip', 'allow', '5001', '203.0.113.0/24', '10.1.0.0/16', '--json'));
      assert.deepEqual(again, { siteId: '5001', added: ['10.1.0.0/16'], alreadyAllowed: ['203.0.113.0/24'] });
      const { rows } = await sql.query('SELECT cidr::text FROM allowlist_entries WHERE site_id = 5001 ORDER BY cidr');
      assert.deepEqual(rows.map((row) => row.cidr).sort(), ['10.1.0.0/16', '192.0.2.0/24', '198.51.100.7/32', '2001:db8:42::/48', '203.0.113.0/24']);
    });

    it('refuses a malformed network and changes nothing', async () => {
      const result = await cli('ip', 'allow', '5001', '172.16.0.0/12', '203.0.113.9/24');
      refused(result, USAGE, /"203\.0\.113\.9\/24" has bits set after the prefix; did you mean 203\.0\.113\.0\/24.*\(nothing was changed\)/);
      const { rows } = await sql.query("SELECT 1 FROM allowlist_entries WHERE cidr = '172.16.0.0/12'");
      assert.equal(rows.length, 0);
      refused(await cli('ip', 'allow', '5001'), USAGE, /missing arguments; usage: sitekey-authz ip allow <site> <cidr>\.\.\./);
      refused(
        await cli('ip', 'allow', '5001', '10.0.0.1,10.0.0.2'),
        USAGE,
        /"10\.0\.0\.1,10\.0\.0\.2" is not an IP address or CIDR; separate entries with spaces, not commas, e\.g\. 10\.0\.0\.1 10\.0\.0\.2 \(nothing/,
      );
      refused(await cli('ip', 'revoke', '5001', '10.0.0.0/24,', '10.0.1.0/24'), USAGE, /"10\.0\.0\.0\/24," .*separate entries with spaces, not commas/);
      refused(await cli('ip', 'allow', '4242', '10.0.0.0/8'), FAILED, /site 4242 does not exist/);
    });

    it('refuses an entry that admits every address until --allow-any-address confirms it, and then warns', async () => {
      await cli('site', 'add', '5002');
      const unconfirmed = await cli('ip', 'allow', '5002', '0.0.0.0/0', '::/0');
      refused(unconfirmed, USAGE, /^sitekey-authz: <cidr>: 0\.0\.0\.0\/0 and ::\/0 would admit every address on the internet.*nothing was changed.*; to go ahead all the same, add --allow-any-address\n$/);
      assert.equal(json<unknown[]>(await cli('ip', 'list', '5002', '--json')).length, 0);
      const result = await cli('ip', 'allow', '5002', '0.0.0.0/0', '::/0', '--allow-any-address');
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stderr, /warning: 0\.0\.0\.0\/0 admits every IPv4 address/);
      assert.match(result.stderr, /warning: ::\/0 admits every IPv6 address/);
    });

    it('warns that an IPv6 entry covering ::ffff:0:0/96 admits no IPv4 client, and what to type instead', async () => {
      await cli('site', 'add', '5004');
      const result = await cli('ip', 'allow', '5004', '::/80', '::fffe:0:0/95', '2001:db8::/32', '::/0', '::ffff:0:0/96', '--allow-any-address');
      assert.equal(result.code, 0, result.stderr);
      for (const cidr of ['::/80', '::fffe:0:0/95', '::/0']) {
        const warning = new RegExp(`^warning: ${cidr.replaceAll('/', '\\/')} does not admit IPv4 clients.*IPv4 clients match IPv4 entries only\\. To admit them, add an IPv4 network too, e\\.g\\. 203\\.0\\.113\\.0\\/24$`, 'm');
        assert.match(result.stderr, warning);
      }
      assert.doesNotMatch(result.stderr, /2001:db8::\/32/);
      // The IPv4-mapped range itself is the IPv4 network it maps, as it always was.
      assert.match(result.stdout, /0\.0\.0\.0\/0/);
      assert.match(result.stderr, /warning: 0\.0\.0\.0\/0 admits every IPv4 address/);
    });

    it('lists the allowlist, and says what an empty one means', async () => {
      const list = await cli('ip', 'list', '5001');
      assert.match(list.stdout, /^CIDR +ADDED$/m);
      assert.match(list.stdout, /^203\.0\.113\.0\/24 +\d{4}-/m);
      await cli('site', 'add', '5003');
      assert.match((await cli('ip', 'list', '5003')).stdout, /site 5003 has no allowlist entry: every request is refused \(103\)/);
      assert.equal(json<unknown[]>(await cli('ip', 'list', '5003', '--json')).length, 0);
    });

    it('revokes entries all together, or none when one is not on the list', async () => {
      refused(await cli('ip', 'revoke', '5001', '10.1.0.0/16', '10.2.0.0/16'), FAILED, /not on the allowlist of site 5001: 10\.2\.0\.0\/16; nothing was revoked/);
      assert.equal((await sql.query("SELECT 1 FROM allowlist_entries WHERE site_id = 5001 AND cidr = '10.1.0.0/16'")).rows.length, 1);
      const revoked = await cli('ip', 'revoke', '5001', '10.1.0.0/16', '::ffff:192.0.2.0/120');
      assert.match(revoked.stdout, /removed from the allowlist of site 5001: 10\.1\.0\.0\/16, 192\.0\.2\.0\/24/);
      const audit = (await auditActions('5001')).map((row) => [row.action, row.details]);
      const [action, details] = audit.at(-1) as [string, { cidrs: string[]; before: { entries: number }; after: { entries: number } }];
      assert.deepEqual([action, details.cidrs], ['ip.revoke', ['10.1.0.0/16', '192.0.2.0/24']]);
      assert.equal(details.after.entries, details.before.entries - 2, 'the allowlist before and after, in entries');
    });

    it('revokes an entry whose address PostgreSQL writes differently (IPv4-compatible IPv6)', async () => {
      assert.equal((await cli('ip', 'allow', '5001', '::102:304')).code, 0);
      assert.match((await cli('ip', 'list', '5001')).stdout, /^::1\.2\.3\.4\/128 /m);
      const revoked = await cli('ip', 'revoke', '5001', '::1.2.3.4');
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.equal((await sql.query("SELECT 1 FROM allowlist_entries WHERE cidr = '::1.2.3.4/128'")).rows.length, 0);
    });

    it('names the listed networks that hold an address it cannot revoke, and the command that removes them', async () => {
      await cli('site', 'add', '5044');
      assert.equal((await cli('ip', 'allow', '5044', '203.0.113.0/24', '10.8.0.0/16', '10.8.1.0/24', '2001:db8:42::/48')).code, 0);
      const cases: Array<[string, RegExp]> = [
        ['203.0.113.9', /203\.0\.113\.9\/32 is not on the allowlist of site 5044, but it lies inside 203\.0\.113\.0\/24, which stays and admits it: remove that network instead; nothing was revoked; to remove the network: sitekey-authz ip revoke 5044 203\.0\.113\.0\/24$/m],
        ['10.8.1.5', /10\.8\.1\.5\/32 .* lies inside 10\.8\.1\.0\/24 and 10\.8\.0\.0\/16, which stay and admit it.*; to remove those networks: sitekey-authz ip revoke 5044 10\.8\.1\.0\/24 10\.8\.0\.0\/16$/m],
        ['2001:db8:42::1', /2001:db8:42::1\/128 .* lies inside 2001:db8:42::\/48, .*; to remove the network: sitekey-authz ip revoke 5044 2001:db8:42::\/48$/m],
      ];
      for (const [address, message] of cases) refused(await cli('ip', 'revoke', '5044', address), FAILED, message);
      const both = await cli('ip', 'revoke', '5044', '192.0.2.1', '203.0.113.9');
      refused(both, FAILED, /not on the allowlist of site 5044: 192\.0\.2\.1\/32; 203\.0\.113\.9\/32 .* lies inside 203\.0\.113\.0\/24,/);
      assert.equal((await sql.query('SELECT 1 FROM allowlist_entries WHERE site_id = 5044')).rows.length, 4);
    });
  });

  describe('command line', () => {
    it('is an executable with a node shebang, as npx sitekey-authz runs it', async () => {
      assert.notEqual(statSync(CLI).mode & 0o111, 0, `${CLI} is not executable: make build must chmod it`);
      assert.match(readFileSync(CLI, 'utf8'), /^#!\/usr\/bin\/env node\n/);
    });

    it('prints help, and names the commands when one is mistyped', async () => {
      const help = await cli('--help');
      assert.equal(help.code, 0);
      for (const command of ['serve', 'migrate', 'site add', 'key import', 'ip revoke']) assert.ok(help.stdout.includes(command));
      refused(await cli('site', 'remove', '1'), USAGE, /"site remove" is not a command; "site" takes one of: site add, site disable, site enable, site list/);
      refused(await cli('sites'), USAGE, /"sites" is not a command; try one of: serve, issuer, migrate, site, key, ip/);
      refused(await cli(), USAGE, /no command given/);
      assert.match((await cli('key', 'issue', '--help')).stdout, /Usage: sitekey-authz key issue <site> \[--expires ISO\] \[--note T\]/);
    });

    it('prints its version from package.json for --version and -V', async () => {
      const { version } = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };
      for (const flag of ['--version', '-V']) {
        const result = await cli(flag);
        assert.deepEqual([result.code, result.stdout, result.stderr], [0, `sitekey-authz ${version}\n`, ''], flag);
      }
    });

    it('prints every command of a group, with the rules of their arguments and examples, for <group> --help', async () => {
      const rules: Record<string, RegExp[]> = {
        site: [/<id>\n +the site id: a positive whole number with no sign, spaces or leading zero, at most\s+9223372036854775807/, /--name N\n/],
        key: [/<site>\n +the site id: a positive whole number/, /--expires ISO\n.*2027-01-31 or 2027-01-31T12:00:00Z/s, /<key-id>\n +the number in the KEY ID column/],
        ip: [/<cidr>\.\.\.\n +an IPv4 or IPv6 network with no bits set after the prefix, or a single address/, /separated by spaces/],
      };
      for (const [group, expected] of Object.entries(rules)) {
        for (const flag of ['--help', '-h']) {
          const result = await cli(group, flag);
          assert.equal(result.code, 0, `${group} ${flag}: ${result.stderr}`);
          for (const command of COMMANDS.filter((candidate) => candidate.name.startsWith(`${group} `))) {
            assert.ok(result.stdout.includes(`sitekey-authz ${command.name} ${command.synopsis}`.trim()), `${group} ${flag} lacks ${command.name}`);
          }
          for (const rule of expected) assert.match(result.stdout, rule, `${group} ${flag}`);
          assert.match(result.stdout, new RegExp(`Examples:\n {2}sitekey-authz ${group} `), `${group} ${flag}`);
        }
      }
    });

    it('prints a command\'s usage, its rules and an example for <command> --help, for every command', async () => {
      for (const command of COMMANDS) {
        const result = await cli(...command.name.split(' '), '--help');
        assert.equal(result.code, 0, `${command.name}: ${result.stderr}`);
        assert.ok(result.stdout.startsWith(`Usage: sitekey-authz ${command.name}`), `${command.name} --help:\n${result.stdout}`);
      }
      const expected: Array<[string[], RegExp[]]> = [
        [['key', 'issue'], [/<site>\n +the site id: a positive whole number/, /a date alone is midnight UTC, e\.g\. 2027-01-31 or 2027-01-31T12:00:00Z/, /Example:\n {2}sitekey-authz key issue 1001 --expires 2027-01-31/]],
        [['key', 'import'], [/< key\.txt\n +the key on standard input, a UUID such as xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx/, /Example:\n {2}sitekey-authz key import 1001 .*< key\.txt/]],
        [['key', 'revoke'], [/<key-id>\n +the number in the KEY ID column/, /Example:\n {2}sitekey-authz key revoke 1001 12/]],
        [['ip', 'allow'], [/no bits set after the prefix/, /a single address \(a \/32 or\s+\/128\)/, /Example:\n {2}sitekey-authz ip allow 1001 203\.0\.113\.0\/24/]],
        [['ip', 'revoke'], [/<cidr>\.\.\.\n/, /Example:\n {2}sitekey-authz ip revoke 1001/]],
        [['site', 'add'], [/<id>\n +the site id: a positive whole number/, /Example:\n {2}sitekey-authz site add 1001 --name "Acme Travel"/]],
      ];
      for (const [words, rules] of expected) {
        const [result, asHelpCommand] = await Promise.all([cli(...words, '--help'), cli('help', ...words)]);
        for (const rule of rules) assert.match(result.stdout, rule, words.join(' '));
        assert.equal(asHelpCommand.stdout, result.stdout, `help ${words.join(' ')}`);
      }
    });

    it('audits changes under SITEKEY_ACTOR unless --actor says otherwise', async () => {
      await cli('site', 'add', '6001');
      assert.equal((await auditActions('6001'))[0]?.actor, TEST_ACTOR);
      refused(await cli('site', 'add', '6002', '--actor', 'a\tb'), USAGE, /--actor must not contain control characters/);
      refused(await cli('site', 'add', '6002', '--actor', ' '), USAGE, /--actor must name who makes the change/);
      const before = await cli('--json', '--actor', 'bob', 'site', 'add', '6003');
      assert.equal(json<{ siteId: string }>(before).siteId, '6003');
      assert.equal((await auditActions('6003'))[0]?.actor, 'bob');
    });
  });
});

describe('sitekey-authz against a database it cannot use', () => {
  it('says the schema is missing and how to create it, then migrates', async () => {
    const database = await freshDatabase({ migrated: false });
    try {
      const before = await runCli(database.url, ['site', 'list']);
      assert.equal(before.code, FAILED);
      assert.match(before.stderr, /the database has no sitekey-authz tables yet; create them with `sitekey-authz migrate`/);
      const migrated = await runCli(database.url, ['migrate']);
      assert.equal(migrated.code, 0, migrated.stderr);
      assert.equal(migrated.stdout, `applied ${shippedMigrations().length} migration(s): ${shippedMigrations().join(', ')}\n`);
      assert.match((await runCli(database.url, ['migrate'])).stdout, /the database schema is up to date/);
      assert.equal((await runCli(database.url, ['site', 'list'])).code, 0);
    } finally {
      await database.drop();
    }
  });

  it('says it cannot reach the database, without printing its password', async () => {
    const url = `postgres://authz:hunter2@127.0.0.1:${await freePort()}/authz`;
    const result = await runCli(url, ['site', 'list', '--json']);
    assert.equal(result.code, FAILED);
    const { error } = JSON.parse(result.stderr) as { error: { code: string; message: string } };
    assert.equal(error.code, 'DATABASE_UNAVAILABLE');
    assert.match(error.message, /cannot use the database .*check DATABASE_URL/);
    assert.ok(!result.stderr.includes('hunter2'));
  });

  it('serve exits 1, closing what it opened, when its gRPC port is taken', { timeout: 30_000 }, async () => {
    const database = await freshDatabase();
    const blocker = createServer();
    await new Promise<void>((listening) => blocker.listen(0, '127.0.0.1', listening));
    const { port } = blocker.address() as AddressInfo;
    try {
      const env = { GRPC_PORT: String(port), METRICS_PORT: '0', BIND_ADDRESS: '127.0.0.1' };
      const result = await runCli(database.url, ['serve'], undefined, env);
      assert.equal(result.code, FAILED);
      assert.match(result.stderr, new RegExp(`cannot listen for gRPC on 127\\.0\\.0\\.1:${port}`));
    } finally {
      blocker.close();
      await database.drop();
    }
  });

  it('stops on a bad configuration value, naming the variable', async () => {
    const result = await runCli('', ['serve'], undefined, { GRPC_PORT: 'grpc' });
    assert.equal(result.code, USAGE);
    assert.match(result.stderr, /configuration: GRPC_PORT: expected a whole number from 0 to 65535, got "grpc"/);
  });
});

describe('sitekey-authz with DATABASE_URL unset', () => {
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-cli-'));
  });
  after(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('creates, migrates and keeps an embedded database in DATA_DIR, for commands run side by side too', { timeout: 120_000 }, async () => {
    const env = { DATABASE_URL: '', DATA_DIR: dataDir };
    // Started together on a DATA_DIR with no cluster yet: one initialises and starts it, none may
    // stop it under another.
    const added = await Promise.all(['7001', '7002', '7003'].map((site) => runCli('', ['site', 'add', site, '--name', 'Embedded'], undefined, env)));
    for (const result of added) assert.equal(result.code, 0, result.stderr);
    assert.equal(added.filter((result) => /created a new, empty embedded database/.test(result.stderr)).length, 1);
    const sites = await runCli('', ['site', 'list', '--json'], undefined, env);
    assert.equal(sites.code, 0, sites.stderr);
    assert.deepEqual((JSON.parse(sites.stdout) as Array<{ siteId: string }>).map((site) => site.siteId), ['7001', '7002', '7003']);
  });
});
