import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startAdminIssuer, type AdminIssuer, type AdminPersonName } from '../../support/admin-issuer.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { authorizationClient, check, verdict } from '../../support/envoy-client.js';
import { eventually } from '../../support/eventually.js';
import { clientAssertion, partnerKey, requestToken, type HttpAnswer, type TokenRequest } from '../../support/issuer-client.js';
import { startIssuerProcess, type IssuerProcess } from '../../support/issuer-process.js';
import { runCli, startService, type RunningService } from '../../support/service.js';
import type { Handover } from '../../../src/token/client-onboarding.js';

const WORKERS = 2;
// Connections of their own, enough that the primary's turns give each worker several.
const CONNECTIONS = 6;
const PROPAGATION_BOUND_MS = 1_000;
const HANDOVER_FIELDS = ['client_id', 'client_secret', 'token_endpoint', 'resource', 'guide_url'];

/**
 * The whole hand-over against the product issuer, as a user runs it: `sitekey-authz issuer` (started
 * as `make issuer` does, its registration token made on loopback and copied from its banner) and
 * `serve` (two workers, the issuer's keys found by discovery) on one database. A partner's client is
 * created, rotated and removed with the CLI and with the admin API; the partner gets each token from
 * the issuer's token endpoint with the hand-over alone, and a real Check answers on every worker.
 */
describe('the hand-over, against sitekey-authz issuer', () => {
  let database: TestDatabase;
  let issuer: IssuerProcess;
  let staff: AdminIssuer;
  let service: RunningService;
  let sql: pg.Client;
  let workDir: string;
  let serveEnv: Record<string, string>;
  let clients: Array<ReturnType<typeof authorizationClient>> = [];
  const staffTokens = new Map<AdminPersonName, string>();

  const cli = async (...args: string[]): Promise<string> => {
    const result = await runCli(database.url, args, undefined, serveEnv);
    assert.equal(result.code, 0, result.stderr);
    return result.stdout;
  };
  const everyWorker = async (token: string) => Promise.all(clients.map(async (client) => verdict(await check(client, { authorization: `Bearer ${token}` }))));
  const allowedEverywhere = (token: string) =>
    eventually('every worker to allow the token', () => everyWorker(token), (answers) => answers.every((answer) => answer === 'allow'), 10_000);
  const tokenRequest = (how: TokenRequest): Promise<HttpAnswer> => requestToken(issuer.tokenEndpoint, how);
  /** The partner's request with the hand-over of a client with a secret. */
  const withSecret = (handover: Handover) => tokenRequest({ basic: { clientId: handover.client_id, clientSecret: handover.client_secret as string }, resource: handover.resource });
  const accessToken = (answer: HttpAnswer): string => {
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body.access_token as string;
  };
  const refusedAsInvalidClient = (answer: HttpAnswer) => assert.deepEqual([answer.status, answer.body.error], [401, 'invalid_client']);
  const stored = async (clientId: string) => (await sql.query('SELECT 1 FROM token_clients WHERE client_id = $1', [clientId])).rowCount === 1;

  async function api(person: AdminPersonName, method: string, path: string, status: number): Promise<any> {
    const response = await fetch(`${service.adminBase}${path}`, {
      method,
      headers: { authorization: `Bearer ${staffTokens.get(person)}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
      ...(method === 'POST' ? { body: '{}' } : {}),
    });
    const text = await response.text();
    assert.equal(response.status, status, `${method} ${path}: ${text}`);
    return text === '' ? undefined : JSON.parse(text);
  }

  /** Removes the client and measures, from the commit, how long until every worker refuses `token` with 107. */
  async function removedEverywhere(clientId: string, token: string, remove: () => Promise<unknown>): Promise<number> {
    let settled = false;
    const removing = remove().finally(() => (settled = true));
    // A removal that fails ends the wait: awaiting it below says why.
    while (!settled && (await stored(clientId))) await sleep(5);
    if (settled) await removing;
    const commit = performance.now();
    await eventually('every worker to refuse the token with 107', () => everyWorker(token), (answers) => answers.every((answer) => answer === 107), 10_000);
    const took = performance.now() - commit;
    await removing;
    return took;
  }

  before(async () => {
    database = await freshDatabase();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    workDir = await mkdtemp(join(tmpdir(), 'hand-over-'));
    issuer = await startIssuerProcess({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false' });
    serveEnv = issuer.serveEnv;
    assert.deepEqual(Object.keys(serveEnv), ['TOKEN_ISSUER', 'TOKEN_AUDIENCE', 'TOKEN_REGISTRATION_TOKEN'], issuer.output());
    staff = await startAdminIssuer();
    await cli('site', 'add', '1001');
    await cli('ip', 'allow', '1001', '203.0.113.0/24');
    // No TOKEN_JWKS_URL: serve reads the jwks_uri from the issuer's discovery document.
    service = await startService({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', WORKERS: String(WORKERS), ...serveEnv, ...staff.env() });
    clients = Array.from({ length: CONNECTIONS }, () => authorizationClient(service.grpcTarget, { 'grpc.use_local_subchannel_pool': 1 }));
    for (const person of ['viewer', 'manager'] as const) staffTokens.set(person, await staff.tokenFor(person));
  });

  after(async () => {
    for (const client of clients) client.close();
    await service?.stop();
    await staff?.close();
    await issuer?.stop();
    await sql?.end();
    await database?.drop();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  let secretClient: Handover;
  let secretToken: string;

  it('token-client create --json: the printed credentials get a token at the printed endpoint, allowed on every worker', async () => {
    secretClient = JSON.parse(await cli('token-client', 'create', '1001', '--json')) as Handover;
    assert.deepEqual(Object.keys(secretClient), HANDOVER_FIELDS);
    assert.deepEqual([secretClient.token_endpoint, secretClient.resource], [issuer.tokenEndpoint, serveEnv.TOKEN_AUDIENCE]);
    secretToken = accessToken(await withSecret(secretClient));
    await allowedEverywhere(secretToken);
  });

  it("token-client create --jwks-file: the partner's own key signs the assertion (aud = the issuer), its token is allowed", async () => {
    const key = await partnerKey();
    const jwksFile = join(workDir, 'partner-jwks.json');
    await writeFile(jwksFile, JSON.stringify({ keys: [key.publicJwk] }));
    const keyed = JSON.parse(await cli('token-client', 'create', '1001', '--jwks-file', jwksFile, '--json')) as Handover;
    assert.deepEqual(Object.keys(keyed), HANDOVER_FIELDS.filter((name) => name !== 'client_secret'));
    const token = accessToken(await tokenRequest({ assertion: await clientAssertion(key, keyed.client_id, issuer.url), resource: keyed.resource }));
    await allowedEverywhere(token);
  });

  it('token-client rotate-secret: the old secret is refused at the token endpoint, the new one works, and again', async () => {
    let current = secretClient;
    for (const round of [1, 2]) {
      const rotated = JSON.parse(await cli('token-client', 'rotate-secret', current.client_id, '--json')) as Handover;
      assert.deepEqual(Object.keys(rotated), HANDOVER_FIELDS);
      assert.equal(rotated.client_id, current.client_id);
      assert.notEqual(rotated.client_secret, current.client_secret, `round ${round}`);
      refusedAsInvalidClient(await withSecret(current));
      await allowedEverywhere(accessToken(await withSecret(rotated)));
      current = rotated;
    }
    secretClient = current;
  });

  it('token-client remove: the client is refused at the token endpoint, and a token minted before is refused (107) on every worker within a second', async () => {
    const before = accessToken(await withSecret(secretClient));
    await allowedEverywhere(before);
    const took = await removedEverywhere(secretClient.client_id, before, () => cli('token-client', 'remove', secretClient.client_id));
    assert.ok(took < PROPAGATION_BOUND_MS, `removal took ${Math.round(took)} ms`);
    refusedAsInvalidClient(await withSecret(secretClient));
    assert.deepEqual(await everyWorker(secretToken), Array(CONNECTIONS).fill(107), 'the first token too');
  });

  it('the admin API: create, a token allowed, rotate (old secret refused), remove (client refused, its token 107 on every worker)', async () => {
    assert.equal((await fetch(`${service.adminBase}/api/v1/sites/1001/token-clients/create`, { method: 'POST', headers: { authorization: `Bearer ${staffTokens.get('viewer')}`, 'content-type': 'application/json' }, body: '{}' })).status, 403);
    const created = (await api('manager', 'POST', '/api/v1/sites/1001/token-clients/create', 201)) as Handover;
    assert.deepEqual(Object.keys(created), HANDOVER_FIELDS);
    assert.deepEqual([created.token_endpoint, created.resource], [issuer.tokenEndpoint, serveEnv.TOKEN_AUDIENCE]);
    await allowedEverywhere(accessToken(await withSecret(created)));

    const path = `/api/v1/token-clients/${encodeURIComponent(created.client_id)}`;
    const rotated = (await api('manager', 'POST', `${path}/rotate-secret`, 200)) as Handover;
    refusedAsInvalidClient(await withSecret(created));
    const token = accessToken(await withSecret(rotated));
    await allowedEverywhere(token);

    const took = await removedEverywhere(created.client_id, token, async () => {
      const removed = await api('manager', 'DELETE', path, 200);
      assert.deepEqual([removed.clientId, removed.deletedAtIssuer], [created.client_id, true]);
    });
    assert.ok(took < PROPAGATION_BOUND_MS, `removal took ${Math.round(took)} ms`);
    refusedAsInvalidClient(await withSecret(rotated));
  });

  it('a client created before the issuer restarts is rotated and removed after it, with the registration token printed at the first start only, or when asked for', async () => {
    const created = JSON.parse(await cli('token-client', 'create', '1001', '--json')) as Handover;
    await issuer.stop();
    issuer = await startIssuerProcess({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false' }, { port: issuer.port });
    assert.equal(issuer.serveEnv.TOKEN_REGISTRATION_TOKEN, undefined, 'the token is printed at the first start only');
    assert.equal(issuer.output().includes(serveEnv.TOKEN_REGISTRATION_TOKEN as string), false);

    const rotated = JSON.parse(await cli('token-client', 'rotate-secret', created.client_id, '--json')) as Handover;
    refusedAsInvalidClient(await withSecret(created));
    await allowedEverywhere(accessToken(await withSecret(rotated)));
    await cli('token-client', 'remove', created.client_id);
    refusedAsInvalidClient(await withSecret(rotated));

    await issuer.stop();
    issuer = await startIssuerProcess({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false' }, { port: issuer.port, args: ['--show-registration-token'] });
    assert.equal(issuer.serveEnv.TOKEN_REGISTRATION_TOKEN, serveEnv.TOKEN_REGISTRATION_TOKEN, 'printed again when asked for');
  });
});
