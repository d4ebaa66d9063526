import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startIssuer, type IssuerOptions, type RunningIssuer } from '../../../src/issuer/issuer.js';
import type { TokenEndpointLimits } from '../../../src/issuer/token-endpoint-guard.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { clientAssertion, partnerKey, requestToken, sendJson, type HttpAnswer, type PartnerKey } from '../../support/issuer-client.js';

/**
 * The token endpoint's limits, per client and per source address, and under a flood of bad client
 * assertions: each bad assertion costs a signature check, so an address gets only a few before it is
 * refused unverified, while a client elsewhere still gets its tokens. 127.0.0.2 is loopback too: it
 * stands for another address.
 */
const RESOURCE = 'https://partner-api.test';
const REGISTRATION_TOKEN = 'initial-access-token-for-the-limit-tests-0123456789';
const PLENTY = { burst: 10_000, perSecond: 10_000 };
const SLOW = 0.001;

function assertRateLimited(answer: HttpAnswer): void {
  assert.equal(answer.status, 429, JSON.stringify(answer.body));
  assert.equal(answer.body.error, 'temporarily_unavailable');
  assert.match(String(answer.body.error_description), /retry after \d+ s/);
  assert.match(String(answer.headers['retry-after']), /^\d+$/);
  assert.ok(Number(answer.headers['retry-after']) >= 1);
}

describe('the issuer token endpoint limits', () => {
  let database: TestDatabase;
  const running: RunningIssuer[] = [];
  const start = async (limits: Partial<TokenEndpointLimits>, options: Partial<IssuerOptions> = {}): Promise<RunningIssuer> => {
    const issuer = await startIssuer({
      databaseUrl: database.url,
      port: 0,
      bindAddress: '0.0.0.0',
      resource: RESOURCE,
      registrationToken: REGISTRATION_TOKEN,
      tokenEndpointLimits: { perAddress: PLENTY, perClient: PLENTY, failedPerAddress: PLENTY, ...limits },
      ...options,
    });
    running.push(issuer);
    return issuer;
  };
  const registerSecretClient = async (issuer: RunningIssuer) => {
    const registered = await sendJson(issuer.registrationEndpoint, 'POST', REGISTRATION_TOKEN, {});
    return { clientId: registered.body.client_id as string, clientSecret: registered.body.client_secret as string };
  };
  const registerKeyClient = async (issuer: RunningIssuer): Promise<{ clientId: string; key: PartnerKey }> => {
    const key = await partnerKey();
    const registered = await sendJson(issuer.registrationEndpoint, 'POST', REGISTRATION_TOKEN, { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [key.publicJwk] } });
    return { clientId: registered.body.client_id as string, key };
  };

  before(async () => {
    database = await freshDatabase();
  });

  after(async () => {
    for (const issuer of running) await issuer.close();
    await database?.drop();
  });

  it('refuses a client past its limit with 429, an OAuth error and Retry-After, while other clients go on', async () => {
    const issuer = await start({ perClient: { burst: 3, perSecond: SLOW } });
    const busy = await registerSecretClient(issuer);
    const other = await registerSecretClient(issuer);
    for (let request = 0; request < 3; request++) assert.equal((await requestToken(issuer.tokenEndpoint, { basic: busy })).status, 200);
    assertRateLimited(await requestToken(issuer.tokenEndpoint, { basic: busy }));
    assert.equal((await requestToken(issuer.tokenEndpoint, { basic: other })).status, 200);
  });

  it('counts every spelling of the token endpoint that the provider answers (case, a trailing slash) against the same limits', async () => {
    const issuer = await start({ perAddress: { burst: 2, perSecond: SLOW } });
    const partner = await registerSecretClient(issuer);
    assert.equal((await requestToken(issuer.tokenEndpoint, { basic: partner })).status, 200);
    assert.equal((await requestToken(`${issuer.url}/TOKEN`, { basic: partner })).status, 200, 'the provider answers the path without case');
    for (const spelling of ['/token', '/TOKEN', '/token/', '/Token']) assertRateLimited(await requestToken(`${issuer.url}${spelling}`, { basic: partner }));
  });

  it('refuses an address past its limit, while another address goes on', async () => {
    const issuer = await start({ perAddress: { burst: 4, perSecond: SLOW } });
    const partner = await registerSecretClient(issuer);
    for (let request = 0; request < 4; request++) assert.equal((await requestToken(issuer.tokenEndpoint, { basic: partner, localAddress: '127.0.0.2' })).status, 200);
    assertRateLimited(await requestToken(issuer.tokenEndpoint, { basic: partner, localAddress: '127.0.0.2' }));
    assert.equal((await requestToken(issuer.tokenEndpoint, { basic: partner, localAddress: '127.0.0.1' })).status, 200);
  });

  it('verifies only a few bad assertions from one address, refusing the rest unverified, while a legitimate client elsewhere still gets tokens', async () => {
    const failures = 5;
    const issuer = await start({ failedPerAddress: { burst: failures, perSecond: SLOW } });
    const victim = await registerKeyClient(issuer);
    const legitimate = await registerKeyClient(issuer);
    const forger = await partnerKey();
    const flood = Array.from({ length: 200 }, async () =>
      requestToken(issuer.tokenEndpoint, { assertion: await clientAssertion(forger, victim.clientId, issuer.url), localAddress: '127.0.0.2' }),
    );
    const legitimateAnswers: HttpAnswer[] = [];
    for (let request = 0; request < 10; request++) {
      legitimateAnswers.push(await requestToken(issuer.tokenEndpoint, { assertion: await clientAssertion(legitimate.key, legitimate.clientId, issuer.url), localAddress: '127.0.0.1' }));
    }
    const flooded = await Promise.all(flood);
    assert.deepEqual(legitimateAnswers.map((answer) => answer.status), Array(10).fill(200));
    const verified = flooded.filter((answer) => answer.status === 401);
    const refused = flooded.filter((answer) => answer.status === 429);
    assert.equal(verified.length, failures, 'only the failure budget reached a signature check');
    assert.equal(refused.length, flooded.length - failures);
    assertRateLimited(refused[0] as HttpAnswer);
    // The victim itself, from its own address, is not locked out by the flood.
    const victimAnswer = await requestToken(issuer.tokenEndpoint, { assertion: await clientAssertion(victim.key, victim.clientId, issuer.url), localAddress: '127.0.0.1' });
    assert.equal(victimAnswer.status, 200, JSON.stringify(victimAnswer.body));
  });

  it('gives the failure budget back to an address whose clients authenticate', async () => {
    const issuer = await start({ failedPerAddress: { burst: 2, perSecond: SLOW } });
    const partner = await registerSecretClient(issuer);
    for (let request = 0; request < 10; request++) assert.equal((await requestToken(issuer.tokenEndpoint, { basic: partner })).status, 200);
    assert.equal((await requestToken(issuer.tokenEndpoint, { basic: { ...partner, clientSecret: 'wrong' } })).status, 401);
    assert.equal((await requestToken(issuer.tokenEndpoint, { basic: { ...partner, clientSecret: 'wrong' } })).status, 401);
    assertRateLimited(await requestToken(issuer.tokenEndpoint, { basic: partner }));
  });
});
