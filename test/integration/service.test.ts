import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { eventually } from '../support/eventually.js';
import { runCli, startService, type RunningService } from '../support/service.js';

/** The whole path a partner request takes: CLI → PostgreSQL → `serve` → gRPC Check, as real processes. */
describe('sitekey-authz serve, end to end', () => {
  let database: TestDatabase;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;
  let key: string;

  before(async () => {
    database = await freshDatabase();
    for (const args of [
      ['site', 'add', '1001', '--name', 'Acme Travel'],
      ['ip', 'allow', '1001', '203.0.113.0/24', '2001:db8::/32'],
    ]) {
      const result = await runCli(database.url, args);
      assert.equal(result.code, 0, result.stderr);
    }
    const issued = await runCli(database.url, ['key', 'issue', '1001', '--json']);
    assert.equal(issued.code, 0, issued.stderr);
    key = (JSON.parse(issued.stdout) as { apiKey: string }).apiKey;
    // A flush interval longer than the test: last-used times can then only come from the SIGTERM flush.
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', LAST_USED_FLUSH_SECONDS: '3600', MAX_BODY_BYTES: '4096' });
    client = authorizationClient(service.grpcTarget);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await database?.drop();
  });

  const body = (siteid: unknown, apikey: string) => JSON.stringify({ siteid, apikey, order: { id: 7 } });

  it('allows a well-formed request and tells the upstream which site it is', async () => {
    const response = await check(client, { authorization: `1001:${key}`, body: body(1001, key) });
    assert.equal(verdict(response), 'allow');
    const siteHeader = response.ok_response?.headers.find((h) => h.header.key === 'x-site-id');
    assert.equal(siteHeader?.header.value, '1001');
    assert.equal(siteHeader?.append_action, 'OVERWRITE_IF_EXISTS_OR_ADD');
    const fields = response.dynamic_metadata?.fields ?? {};
    assert.equal(fields.site_id?.string_value ?? fields.site_id?.stringValue, '1001');
  });

  it('answers each denial with the exact body, HTTP status and gRPC code', async () => {
    const unknownKey = '00000000-0000-4000-8000-0000000fedcb';
    const cases = [
      { args: { body: body(1001, key) }, id: 108, http: 'Unauthorized', grpc: 16, message: 'Site ID or API key is invalid or missing in the header' },
      { args: { authorization: `4242:${key}`, body: body(4242, key) }, id: 101, http: 'Unauthorized', grpc: 16, message: 'Site ID 4242 is invalid' },
      {
        args: { authorization: `1001:${key}`, body: body(1001, key), ip: '198.51.100.9' },
        id: 103,
        http: 'Forbidden',
        grpc: 7,
        message: 'IP address 198.51.100.9 is not whitelisted for site ID 1001',
      },
      { args: { authorization: `1001:${unknownKey}`, body: body(1001, unknownKey) }, id: 102, http: 'Unauthorized', grpc: 16, message: 'API key *****fedcb is invalid' },
      {
        args: { authorization: `1001:${key}`, body: body(1002, key) },
        id: 104,
        http: 'Unauthorized',
        grpc: 16,
        message: 'Request body siteid does not match the site ID in the Authorization header',
      },
      {
        args: { authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key, note: 'x'.repeat(4096) }) },
        id: 104,
        http: 'Unauthorized',
        grpc: 16,
        message: 'Request body is larger than the authorization service accepts (4096 bytes), so siteid and apikey cannot be verified',
      },
    ];
    for (const c of cases) {
      const response = await check(client, c.args);
      assert.equal(response.status.code, c.grpc, `gRPC code for ${c.id}`);
      assert.equal(response.http_response, 'denied_response');
      assert.equal(response.denied_response?.status.code, c.http);
      assert.deepEqual(
        response.denied_response?.headers.map((h) => [h.header.key, h.header.value]),
        [['content-type', 'application/json']],
      );
      assert.equal(response.denied_response?.body, JSON.stringify({ error: { id: c.id, message: c.message } }));
    }
  });

  it('logs one line per denial with the masked key, and never the key in any spelling', async () => {
    await check(client, { authorization: `1001:${key}`, body: body(1001, key), ip: '192.0.2.44', headers: { 'x-request-id': 'req-103' } });
    const denial = await eventually(
      'the log line of the denial',
      async () =>
        service
          .output()
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .find((entry) => entry.requestId === 'req-103'),
      (entry) => entry !== undefined,
      10_000,
    );
    assert.ok(denial, 'no log line for the denial');
    assert.equal(denial.errorId, 103);
    assert.equal(denial.siteId, '1001');
    assert.equal(denial.clientIp, '192.0.2.44');
    assert.equal(denial.maskedKey, `*****${key.slice(-5)}`);
    // The key in every spelling a log line could carry it: as issued, upper-cased, as the header
    // value, and as the bare 32 hex digits of its UUID.
    const output = service.output().toLowerCase();
    for (const secret of [key, `1001:${key}`, key.replaceAll('-', '')]) {
      assert.ok(!output.includes(secret.toLowerCase()), `the key reached the log as ${secret.slice(0, 8)}…`);
    }
  });

  it('reports live and ready on the operator endpoints', async () => {
    assert.equal((await fetch(`${service.httpBase}/healthz`)).status, 200);
    const ready = await fetch(`${service.httpBase}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal(((await ready.json()) as { status: string }).status, 'ready');
  });

  it('drains, flushes last-used times and exits 0 on SIGTERM', async () => {
    const code = await service.stop();
    assert.equal(code, 0, service.output());
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    try {
      const { rows } = await sql.query<{ last_used_at: Date | null }>('SELECT last_used_at FROM api_keys');
      assert.equal(rows.length, 1);
      assert.ok(rows[0]?.last_used_at instanceof Date, 'the allowed checks were not recorded as a last use');
    } finally {
      await sql.end();
    }
  });
});
