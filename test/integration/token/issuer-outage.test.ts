import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { describe, it } from 'node:test';
import pg from 'pg';
import { TOKEN_RULE_DESCRIPTIONS } from '../../../src/decision/rule-words.js';
import { freshDatabase } from '../../support/database.js';
import { authorizationClient, check, verdict, type UpstreamCheckResponse } from '../../support/envoy-client.js';
import { eventually } from '../../support/eventually.js';
import { samples } from '../../support/exposition.js';
import { JwksServer, signedToken, signingKey } from '../../support/jwks-server.js';
import { startTestIssuer, type TestIssuerClient } from '../../support/oidc-issuer.js';
import { runCli, startService, type RunningService } from '../../support/service.js';

const PARTNER: TestIssuerClient = { clientId: 'partner-1001', clientSecret: 'secret-of-partner-1001' };
const KEYS_UNAVAILABLE = TOKEN_RULE_DESCRIPTIONS['keys-unavailable'];

interface TokenKeysDetail {
  readonly loaded: boolean;
  readonly keys: number;
  readonly from: 'issuer' | 'database' | null;
  readonly ageSeconds: number | null;
}

async function readyz(service: RunningService): Promise<{ status: number; tokenKeys: TokenKeysDetail }> {
  const response = await fetch(`${service.httpBase}/readyz`);
  const body = (await response.json()) as { detail?: { tokenKeys: TokenKeysDetail }; tokenKeys?: TokenKeysDetail };
  return { status: response.status, tokenKeys: (body.detail?.tokenKeys ?? body.tokenKeys) as TokenKeysDetail };
}

const metric = async (service: RunningService, name: string, labels = ''): Promise<number | undefined> =>
  samples(await (await fetch(`${service.httpBase}/metrics`)).text(), name).get(labels);

const deniedHeader = (response: UpstreamCheckResponse, name: string): string | undefined =>
  response.denied_response?.headers?.find((option) => option.header?.key === name)?.header?.value;

async function siteWithKey(databaseUrl: string): Promise<string> {
  const cli = async (...args: string[]) => {
    const result = await runCli(databaseUrl, args);
    assert.equal(result.code, 0, result.stderr);
    return result.stdout;
  };
  await cli('site', 'add', '1001');
  await cli('ip', 'allow', '1001', '203.0.113.0/24');
  return (JSON.parse(await cli('key', 'issue', '1001', '--json')) as { apiKey: string }).apiKey;
}

const keyRequest = (key: string) => ({ authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) });

/**
 * The issuer's outage is not an outage of keys: a pod that cannot fetch the issuer's signing keys is
 * ready, answers API-key checks, and refuses tokens (106 keys-unavailable) only while it holds no key
 * set; the last good set, kept in the database, lets a new pod verify tokens while the issuer is down.
 */
describe("serve while the token issuer's keys cannot be fetched", () => {
  it('with none stored: ready, API keys allowed, tokens refused with 106 keys-unavailable until the issuer answers', async () => {
    const database = await freshDatabase();
    const jwks = await JwksServer.start();
    jwks.serve(503, 'down for maintenance');
    const key = await signingKey('k1');
    const apiKey = await siteWithKey(database.url);
    const service = await startService({
      DATABASE_URL: database.url,
      MIGRATE_ON_START: 'false',
      TOKEN_ISSUER: 'https://issuer.test',
      TOKEN_AUDIENCE: 'https://partner-api.test',
      TOKEN_JWKS_URL: jwks.url,
    });
    const client = authorizationClient(service.grpcTarget);
    try {
      const ready = await readyz(service);
      assert.equal(ready.status, 200);
      assert.deepEqual([ready.tokenKeys.loaded, ready.tokenKeys.from, ready.tokenKeys.ageSeconds], [false, null, null]);
      assert.equal(verdict(await check(client, keyRequest(apiKey))), 'allow');

      const now = Math.floor(Date.now() / 1000);
      const token = await signedToken(key, { iss: 'https://issuer.test', aud: 'https://partner-api.test', client_id: 'c', iat: now, exp: now + 120 });
      const refused = await check(client, { authorization: `Bearer ${token}` });
      assert.equal(verdict(refused), 106);
      assert.equal(refused.denied_response?.body, JSON.stringify({ error: { id: 106, message: `Access token is invalid: ${KEYS_UNAVAILABLE}` } }));
      assert.match(KEYS_UNAVAILABLE, /signing keys are unavailable .* retry later/);
      assert.equal(deniedHeader(refused, 'www-authenticate'), `Bearer error="invalid_token", error_description="${KEYS_UNAVAILABLE}"`);
      assert.equal(await metric(service, 'sitekey_authz_token_refusals_total', '{reason="keys-unavailable"}'), 1);
      assert.ok(Number.isNaN(await metric(service, 'sitekey_authz_token_issuer_keys_age_seconds')), 'no age while no key set is held');
      assert.ok(((await metric(service, 'sitekey_authz_token_issuer_key_fetches_total', '{result="failed"}')) ?? 0) >= 1);

      const tokenEnv = { TOKEN_ISSUER: 'https://issuer.test', TOKEN_AUDIENCE: 'https://partner-api.test', TOKEN_JWKS_URL: jwks.url };
      const explained = await runCli(database.url, ['explain', '--authorization', `Bearer ${token}`, '--ip', '203.0.113.7', '--json'], undefined, tokenEnv);
      assert.equal(explained.code, 1, explained.stderr);
      assert.equal((JSON.parse(explained.stdout) as { rule: string }).rule, 'keys-unavailable', 'explain answers as the service does');

      jwks.publish([key]);
      await eventually('the token verified once the issuer answers', async () => verdict(await check(client, { authorization: `Bearer ${token}` })), (answer) => answer === 107, 20_000);
      const after = await readyz(service);
      assert.deepEqual([after.status, after.tokenKeys.loaded, after.tokenKeys.from], [200, true, 'issuer']);
    } finally {
      client.close();
      await service.stop();
      await jwks.close();
      await database.drop();
    }
  });

  it('stores the fetched set, keeps it when the issuer goes down, and a new pod starts with it: tokens verified from the database', async () => {
    const database = await freshDatabase();
    const issuer = await startTestIssuer({ clients: [PARTNER] });
    const apiKey = await siteWithKey(database.url);
    assert.equal((await runCli(database.url, ['token-client', 'add', '1001', PARTNER.clientId])).code, 0);
    // TOKEN_JWKS_URL unset: the keys are found through the issuer's discovery document.
    const env = { DATABASE_URL: database.url, MIGRATE_ON_START: 'false', TOKEN_ISSUER: issuer.issuer, TOKEN_AUDIENCE: issuer.audience };
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    let issuerUp = true;
    let first: RunningService | undefined;
    let second: RunningService | undefined;
    const clients: Array<ReturnType<typeof authorizationClient>> = [];
    try {
      first = await startService(env);
      const firstClient = authorizationClient(first.grpcTarget);
      clients.push(firstClient);
      const [whileUp, afterOutage, onNewPod] = [await issuer.mintAccessToken(PARTNER), await issuer.mintAccessToken(PARTNER), await issuer.mintAccessToken(PARTNER)];
      assert.equal(verdict(await check(firstClient, { authorization: `Bearer ${whileUp}` })), 'allow');
      const stored = await eventually(
        'the fetched key set stored',
        async () => (await sql.query<{ source_kind: string; source: string; jwks: { keys: Array<Record<string, unknown>> } }>('SELECT source_kind, source, jwks FROM token_key_sets')).rows,
        (rows) => rows.length === 1,
        10_000,
      );
      assert.deepEqual([stored[0]?.source_kind, stored[0]?.source], ['issuer', issuer.issuer]);
      assert.ok(stored[0]?.jwks.keys.some((jwk) => jwk['kid'] === issuer.signingKid));
      assert.ok(stored[0]?.jwks.keys.every((jwk) => !('d' in jwk)), 'public keys only');

      await issuer.close();
      issuerUp = false;
      // A made-up kid makes the pod fetch again, which fails: it keeps the set it has, and leaves the
      // token undecided (UNAVAILABLE, Envoy's retryable 503), since a failed fetch says nothing of the kid.
      const madeUp = await signingKey('made-up');
      const now = Math.floor(Date.now() / 1000);
      const stranger = await signedToken(madeUp, { iss: issuer.issuer, aud: issuer.audience, client_id: PARTNER.clientId, iat: now, exp: now + 120 });
      const answers: Array<number | string> = [];
      await eventually(
        'a failed fetch',
        async () => {
          answers.push(await check(firstClient, { authorization: `Bearer ${stranger}` }).then(verdict, (error: { code?: number }) => `grpc ${error.code}`));
          return (await metric(first!, 'sitekey_authz_token_issuer_key_fetches_total', '{result="failed"}')) ?? 0;
        },
        (failed) => failed >= 1,
        20_000,
      );
      assert.deepEqual([...new Set(answers)], [`grpc ${grpc.status.UNAVAILABLE}`], 'undecided while no fetch has told whether the kid exists');
      assert.equal(verdict(await check(firstClient, { authorization: `Bearer ${afterOutage}` })), 'allow', 'the last good set still verifies');
      await first.stop();
      first = undefined;

      second = await startService(env);
      const secondClient = authorizationClient(second.grpcTarget);
      clients.push(secondClient);
      const ready = await readyz(second);
      assert.deepEqual([ready.status, ready.tokenKeys.loaded, ready.tokenKeys.from], [200, true, 'database']);
      assert.equal(verdict(await check(secondClient, keyRequest(apiKey))), 'allow');
      assert.equal(verdict(await check(secondClient, { authorization: `Bearer ${onNewPod}` })), 'allow', 'a token never seen by this pod verifies with the stored set');
      const age = await metric(second, 'sitekey_authz_token_issuer_keys_age_seconds');
      assert.ok(age !== undefined && Number.isFinite(age) && age >= 0, `age ${age}`);
      assert.match(second.output(), /last good key set from the database/);
      const explained = await runCli(database.url, ['explain', '--authorization', `Bearer ${onNewPod}`, '--ip', '203.0.113.7'], undefined, env);
      assert.equal(explained.code, 0, `explain verifies with the stored set too: ${explained.stdout}${explained.stderr}`);
    } finally {
      for (const client of clients) client.close();
      await first?.stop();
      await second?.stop();
      if (issuerUp) await issuer.close();
      await sql.end();
      await database.drop();
    }
  });
});
