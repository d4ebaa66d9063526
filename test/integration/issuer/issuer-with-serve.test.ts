import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startIssuer, type RunningIssuer } from '../../../src/issuer/issuer.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { authorizationClient, check, verdict } from '../../support/envoy-client.js';
import { clientAssertion, partnerKey, requestToken, sendJson } from '../../support/issuer-client.js';
import { runCli, startService, type RunningService } from '../../support/service.js';

/**
 * The issuer's tokens are what `serve` accepts: the issuer and serve on one database, a client
 * registered at the issuer and bound to site 1001, its token allowed through a real Check; the token
 * of a client bound to no site refused (107).
 */
const RESOURCE = 'https://partner-api.test';
const REGISTRATION_TOKEN = 'initial-access-token-for-the-serve-test-0123456789';

describe('the issuer with serve', () => {
  let database: TestDatabase;
  let issuer: RunningIssuer;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;

  const cli = async (...args: string[]) => {
    const result = await runCli(database.url, args);
    assert.equal(result.code, 0, result.stderr);
    return result.stdout;
  };

  before(async () => {
    database = await freshDatabase();
    issuer = await startIssuer({ databaseUrl: database.url, port: 0, resource: RESOURCE, registrationToken: REGISTRATION_TOKEN });
    await cli('site', 'add', '1001');
    await cli('ip', 'allow', '1001', '203.0.113.0/24');
    service = await startService({
      DATABASE_URL: database.url,
      MIGRATE_ON_START: 'false',
      TOKEN_ISSUER: issuer.url,
      TOKEN_AUDIENCE: RESOURCE,
      TOKEN_JWKS_URL: issuer.jwksUrl,
    });
    client = authorizationClient(service.grpcTarget);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await issuer?.close();
    await database?.drop();
  });

  it('allows a Check with the token of a client_secret_basic client bound to the site, and refuses one of a client bound to none', async () => {
    const bound = await sendJson(issuer.registrationEndpoint, 'POST', REGISTRATION_TOKEN, {});
    const unbound = await sendJson(issuer.registrationEndpoint, 'POST', REGISTRATION_TOKEN, {});
    await cli('token-client', 'add', '1001', bound.body.client_id as string);
    const tokenOf = async (answer: typeof bound) =>
      (await requestToken(issuer.tokenEndpoint, { basic: { clientId: answer.body.client_id as string, clientSecret: answer.body.client_secret as string }, resource: RESOURCE })).body
        .access_token as string;
    assert.equal(verdict(await check(client, { authorization: `Bearer ${await tokenOf(bound)}` })), 'allow');
    assert.equal(verdict(await check(client, { authorization: `Bearer ${await tokenOf(unbound)}` })), 107);
  });

  it('allows a Check with the token of a private_key_jwt client, requested without resource', async () => {
    const key = await partnerKey();
    const registered = await sendJson(issuer.registrationEndpoint, 'POST', REGISTRATION_TOKEN, { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [key.publicJwk] } });
    const clientId = registered.body.client_id as string;
    await cli('token-client', 'add', '1001', clientId);
    const answer = await requestToken(issuer.tokenEndpoint, { assertion: await clientAssertion(key, clientId, issuer.url) });
    assert.equal(verdict(await check(client, { authorization: `Bearer ${answer.body.access_token as string}` })), 'allow');
  });
});
