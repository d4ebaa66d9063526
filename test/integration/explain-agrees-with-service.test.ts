import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { CheckAnswer } from '../../src/cli/check-answer.js';
import { insertSite } from '../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { runCli, startService, type CliResult, type RunningService } from '../support/service.js';

const KEY = randomUUID();
const REVOKED = randomUUID();
const EXPIRED = randomUUID();
const OTHER_SITES = randomUUID();
const DISABLED_SITES = randomUUID();
const NO_ALLOWLIST_SITES = randomUUID();
const NEVER_ISSUED = randomUUID();
const IN_BROWNOUT = randomUUID();
const IN_DRY_RUN = randomUUID();
const WITH_GRACE = randomUUID();
const ALL_KEYS = [KEY, REVOKED, EXPIRED, OTHER_SITES, DISABLED_SITES, NO_ALLOWLIST_SITES, NEVER_ISSUED, IN_BROWNOUT, IN_DRY_RUN, WITH_GRACE];

const INSIDE = '203.0.113.7';
const body = (fields: string) => `{${fields}}`;
const base64 = (bytes: Buffer | string) => Buffer.from(bytes).toString('base64');

/** A request for both commands: options, or a CheckRequest in Envoy's JSON written to a --request file. */
interface Case {
  readonly name: string;
  readonly args?: readonly string[];
  readonly request?: unknown;
  /** The error id the service answers; undefined for an allow. */
  readonly id?: 108 | 101 | 103 | 102 | 104 | 105;
  readonly rule?: string;
  /** What explain says, in words. */
  readonly why?: RegExp;
}

const auth = (siteKey: string, ...rest: string[]) => ['--authorization', siteKey, '--ip', INSIDE, ...rest];

const CASES: readonly Case[] = [
  { name: 'no Authorization header', args: ['--ip', INSIDE], id: 108, rule: 'header-missing' },
  { name: 'a header with two colons', args: auth(`1001:${KEY}:x`), id: 108, rule: 'header-malformed' },
  { name: 'a site id with a leading zero', args: auth(`01001:${KEY}`), id: 108, rule: 'site-id-invalid', why: /site id .* is not a positive whole number/ },
  { name: 'a key that is no UUID', args: auth('1001:not-a-uuid'), id: 108, rule: 'api-key-invalid' },
  { name: 'an unknown site', args: auth(`4242:${KEY}`), id: 101, why: /site 4242 is unknown/ },
  { name: 'a disabled site', args: auth(`1003:${DISABLED_SITES}`), id: 101, why: /site 1003 \(Dormant Ltd\) is disabled; `sitekey-authz site enable 1003`/ },
  {
    name: 'an IPv4 client outside the allowlist',
    args: ['--authorization', `1001:${KEY}`, '--ip', '198.51.100.9'],
    id: 103,
    why: /why: IP 198\.51\.100\.9 is not in site 1001's allowlist: 203\.0\.113\.0\/24, 2001:db8:42::\/48 \(the client IP is from CLIENT_IP_SOURCE=peer/,
  },
  { name: 'an IPv6 client outside the allowlist', args: ['--authorization', `1001:${KEY}`, '--ip', '2001:db8:43::1'], id: 103, why: /IP 2001:db8:43::1 is not in/ },
  { name: 'a site whose allowlist is empty', args: auth(`1004:${NO_ALLOWLIST_SITES}`), id: 103, why: /site 1004's allowlist is empty, so it admits nobody/ },
  {
    // --ip refuses it as a typo; a request file can still carry what a misconfigured proxy would send.
    name: 'a client address that is no IP',
    request: {
      attributes: {
        source: { address: { socketAddress: { address: 'gateway.local' } } },
        request: { http: { headers: { authorization: `1001:${KEY}` }, body: body(`"siteid":1001,"apikey":"${KEY}"`) } },
      },
    },
    id: 103,
    why: /the client address "gateway\.local" .* is not an IP address/,
  },
  { name: 'a key never issued', args: auth(`1001:${NEVER_ISSUED}`), id: 102, why: /key \*{5}\S{5} is unknown: it is no key of any site/ },
  { name: 'a revoked key', args: auth(`1001:${REVOKED}`), id: 102, why: /\(key \d+ of site 1001\) was revoked at \d{4}-/ },
  { name: 'an expired key', args: auth(`1001:${EXPIRED}`), id: 102, why: /\(key \d+ of site 1001\) expired at 2020-01-01T00:00:00\.000Z/ },
  { name: "another site's key", args: auth(`1001:${OTHER_SITES}`), id: 102, why: /belongs to another site: it is key \d+ of site 1002, not a key of site 1001/ },
  { name: 'no body', args: auth(`1001:${KEY}`, '--no-body'), id: 104, rule: 'body-missing', why: /body_credentials: optional/ },
  {
    name: 'a declared body that Envoy did not forward',
    args: auth(`1001:${KEY}`, '--no-body', '--header', 'content-length:58'),
    id: 104,
    rule: 'body-not-forwarded',
    why: /turn on with_request_body/,
  },
  { name: 'a body Envoy cut short', args: auth(`1001:${KEY}`, '--header', 'x-envoy-auth-partial-body=true'), id: 104, rule: 'body-partial' },
  { name: 'a body that is not JSON', args: auth(`1001:${KEY}`, '--body', 'siteid=1001'), id: 104, rule: 'body-not-json' },
  { name: 'a body that is no object', args: auth(`1001:${KEY}`, '--body', '[1001]'), id: 104, rule: 'body-not-object' },
  { name: 'a body without siteid', args: auth(`1001:${KEY}`, '--body', body(`"apikey":"${KEY}"`)), id: 104, rule: 'siteid-missing' },
  { name: 'a body with siteid twice', args: auth(`1001:${KEY}`, '--body', body(`"siteid":1001,"SiteID":1001,"apikey":"${KEY}"`)), id: 104, rule: 'siteid-duplicate' },
  {
    name: "a body with another site's id",
    args: auth(`1001:${KEY}`, '--body', body(`"siteid":1002,"apikey":"${KEY}"`)),
    id: 104,
    rule: 'siteid-mismatch',
    why: /the body breaks rule siteid-mismatch: Request body siteid does not match the site ID in the Authorization header/,
  },
  { name: 'a body without apikey', args: auth(`1001:${KEY}`, '--body', body('"siteid":1001')), id: 104, rule: 'apikey-missing' },
  { name: 'a body with apikey twice', args: auth(`1001:${KEY}`, '--body', body(`"siteid":1001,"apikey":"${KEY}","APIKEY":"${KEY}"`)), id: 104, rule: 'apikey-duplicate' },
  { name: 'a body with another key', args: auth(`1001:${KEY}`, '--body', body(`"siteid":"1001","apikey":"${OTHER_SITES}"`)), id: 104, rule: 'apikey-mismatch' },
  {
    name: 'a raw body that is not UTF-8 (--request)',
    request: {
      attributes: {
        source: { address: { socketAddress: { address: INSIDE } } },
        request: { http: { headers: { authorization: `1001:${KEY}` }, rawBody: base64(Buffer.from([0x7b, 0xff, 0xfe, 0x7d])) } },
      },
    },
    id: 104,
    rule: 'body-not-utf8',
  },
  { name: 'a site in a brownout', args: auth(`1005:${IN_BROWNOUT}`), id: 105, rule: 'brownout', why: /brownout \d+, until \S+, refuses API keys and site 1005 has no grace/ },
  { name: 'a site in a dry-run brownout', args: auth(`1006:${IN_DRY_RUN}`), why: /dry-run brownout \d+ counts it as one it would refuse \(105\)/ },
  { name: 'a site in a brownout with grace', args: auth(`1007:${WITH_GRACE}`) },
  { name: 'a well-formed request', args: auth(`1001:${KEY}`), why: /site 1001 is enabled, the client IP 203\.0\.113\.7 is on its allowlist, key \d+ is an active key/ },
  { name: 'raw headers and a raw body', args: auth(`1001:${KEY}`, '--raw-headers', '--raw-body') },
  { name: 'the key in upper case', args: auth(`1001:${KEY.toUpperCase()}`) },
  { name: 'an IPv6 client on the allowlist', args: ['--authorization', `1001:${KEY}`, '--ip', '2001:db8:42::7'] },
  { name: 'an IPv4-mapped IPv6 client', args: ['--authorization', `1001:${KEY}`, '--ip', `::ffff:${INSIDE}`] },
  {
    name: 'no body on a route that makes it optional',
    args: auth(`1001:${KEY}`, '--no-body', '--context', 'body_credentials=optional'),
    why: /no body, which the route allows/,
  },
  {
    name: "Envoy's JSON with camelCase names (--request)",
    request: {
      attributes: {
        source: { address: { socketAddress: { address: INSIDE, portValue: 4242 } } },
        request: { http: { headers: { authorization: `1001:${KEY}` }, body: body(`"siteid":1001,"apikey":"${KEY}"`) } },
      },
    },
  },
  {
    name: "Envoy's JSON with proto names, raw headers and a raw body (--request)",
    request: {
      attributes: {
        source: { address: { socket_address: { address: INSIDE } } },
        request: {
          http: {
            header_map: { headers: [{ key: 'authorization', raw_value: base64(`1001:${KEY}`) }] },
            raw_body: base64(body(`"siteid":1001,"apikey":"${KEY}"`)),
          },
        },
      },
    },
  },
  {
    name: "Envoy's JSON from outside the allowlist (--request)",
    request: {
      attributes: {
        source: { address: { socketAddress: { address: '198.51.100.9' } } },
        request: { http: { headers: { authorization: `1001:${KEY}` }, body: body(`"siteid":1001,"apikey":"${KEY}"`) } },
      },
    },
    id: 103,
  },
];

interface Outcome {
  readonly check: CliResult;
  readonly explain: CliResult;
  /** Explain's words, for the cases that say what to expect of them. */
  readonly explainText: CliResult | undefined;
}

/** Runs `work` over `items`, `limit` at a time: each run is a process start, and the machine is shared. */
async function eachLimited<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index] as T, index);
      }
    }),
  );
  return results;
}

const answer = (run: CliResult): CheckAnswer => JSON.parse(run.stdout) as CheckAnswer;

/**
 * Every case of the table, sent by `check` to a running `serve` and worked out by `explain` from the
 * same database: the two must give the same answer, because they run the same code.
 */
describe('explain agrees with the running service on every case', () => {
  let database: TestDatabase;
  let service: RunningService;
  let requestDir: string;
  const outcomes = new Map<string, Outcome>();

  before(async () => {
    database = await freshDatabase();
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    try {
      const allowlist = ['203.0.113.0/24', '2001:db8:42::/48'];
      await insertSite(pool, { id: '1001', keys: [{ key: KEY }, { key: REVOKED, revoked: true }, { key: EXPIRED, expiresAt: new Date('2020-01-01T00:00:00Z') }], cidrs: allowlist });
      await insertSite(pool, { id: '1002', keys: [{ key: OTHER_SITES }], cidrs: allowlist });
      await insertSite(pool, { id: '1003', enabled: false, keys: [{ key: DISABLED_SITES }], cidrs: allowlist });
      await pool.query("UPDATE sites SET name = 'Dormant Ltd' WHERE id = 1003");
      await insertSite(pool, { id: '1004', keys: [{ key: NO_ALLOWLIST_SITES }] });
      await insertSite(pool, { id: '1005', keys: [{ key: IN_BROWNOUT }], cidrs: allowlist });
      await insertSite(pool, { id: '1006', keys: [{ key: IN_DRY_RUN }], cidrs: allowlist });
      await insertSite(pool, { id: '1007', keys: [{ key: WITH_GRACE }], cidrs: allowlist });
    } finally {
      await pool.end();
    }
    const hours = (n: number) => new Date(Date.now() + n * 3_600_000).toISOString();
    for (const args of [
      ['brownout', 'add', '--from', hours(-1), '--until', hours(2), '--site', '1005', '--site', '1007'],
      ['brownout', 'add', '--from', hours(-1), '--until', hours(2), '--site', '1006', '--dry-run'],
      ['site', 'grace', '1007', '--until', hours(48)],
    ]) {
      const run = await runCli(database.url, args);
      assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
    }
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false' });
    requestDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-explain-'));

    const results = await eachLimited(CASES, 3, async (c, index) => {
      let args = c.args ?? [];
      if (c.request !== undefined) {
        const file = join(requestDir, `request-${index}.json`);
        await writeFile(file, JSON.stringify(c.request));
        args = ['--request', file];
      }
      const [check, explain, explainText] = await Promise.all([
        runCli(database.url, ['check', '--target', service.grpcTarget, '--json', ...args]),
        runCli(database.url, ['explain', '--json', ...args]),
        c.why === undefined ? undefined : runCli(database.url, ['explain', ...args]),
      ]);
      return { check, explain, explainText };
    });
    CASES.forEach((c, index) => outcomes.set(c.name, results[index] as Outcome));
  });

  after(async () => {
    await service?.stop();
    await database?.drop();
    if (requestDir) await rm(requestDir, { recursive: true, force: true });
  });

  for (const c of CASES) {
    it(`${c.id === undefined ? 'allow' : c.id}${c.rule ? ` ${c.rule}` : ''}: ${c.name}`, () => {
      const { check, explain, explainText } = outcomes.get(c.name) as Outcome;
      assert.equal(check.code, c.id === undefined ? 0 : 1, `check: ${check.stdout}${check.stderr}`);
      assert.equal(explain.code, check.code, `explain: ${explain.stdout}${explain.stderr}`);
      const told = answer(explain);
      // On a denial the wire carries no site, key or rule: those only explain can know.
      const knowable = { ...told, ...(told.allowed ? {} : { siteId: null, keyId: null, authMethod: null, clientId: null }), rule: null };
      assert.deepEqual(answer(check), knowable);
      assert.equal(told.error?.id, c.id);
      assert.equal(told.rule, c.rule ?? null);
      if (c.id === undefined) assert.match(told.siteId ?? '', /^100\d$/);
      if (c.why !== undefined) {
        assert.equal(explainText?.code, explain.code);
        assert.match(explainText?.stdout ?? '', /\nwhy: \S/);
        assert.match(explainText?.stdout ?? '', c.why);
      }
      for (const run of [check, explain, ...(explainText === undefined ? [] : [explainText])]) {
        for (const key of ALL_KEYS) assert.ok(!`${run.stdout}${run.stderr}`.toLowerCase().includes(key), 'no full key is ever printed');
      }
    });
  }

  it('explains from the database alone: no verdict (exit 2) when it cannot reach it', async () => {
    const run = await runCli('postgres://nobody@127.0.0.1:1/none', ['explain', '--json', ...auth(`1001:${KEY}`)]);
    assert.equal(run.code, 2);
    assert.equal((JSON.parse(run.stderr) as { error: { code: string } }).error.code, 'DATABASE_UNAVAILABLE');
  });
});
