import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import pg from 'pg';
import { startIssuer, type IssuerOptions, type RunningIssuer } from '../../../src/issuer/issuer.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { eventually } from '../../support/eventually.js';
import { requestToken, send, sendJson } from '../../support/issuer-client.js';

/**
 * The issuer's signing keys live in the database: they survive a restart, several replicas agree on
 * them, and a rotation publishes the new key before it signs and keeps the old one published, so that
 * no token stops verifying.
 */
const RESOURCE = 'https://partner-api.test';
const REGISTRATION_TOKEN = 'initial-access-token-for-the-key-tests-0123456789';

async function publishedKids(issuer: RunningIssuer): Promise<string[]> {
  const jwks = await send(issuer.jwksUrl);
  return ((jwks.body.keys ?? []) as Array<{ kid: string }>).map((key) => key.kid);
}

/** Against the JWKS that `issuer` publishes now; the token's iss is `mintedBy`'s (replicas on two ports have two). */
async function verifiesNow(issuer: RunningIssuer, token: string, mintedBy: RunningIssuer = issuer): Promise<void> {
  const jwks = (await send(issuer.jwksUrl)).body as unknown as JSONWebKeySet;
  await jwtVerify(token, createLocalJWKSet(jwks), { issuer: mintedBy.url, audience: RESOURCE, typ: 'at+jwt' });
}

describe('the issuer signing keys', () => {
  let database: TestDatabase;
  const running: RunningIssuer[] = [];
  const start = async (options: Partial<IssuerOptions> = {}): Promise<RunningIssuer> => {
    const issuer = await startIssuer({ databaseUrl: database.url, port: 0, resource: RESOURCE, registrationToken: REGISTRATION_TOKEN, ...options });
    running.push(issuer);
    return issuer;
  };

  before(async () => {
    database = await freshDatabase();
  });

  after(async () => {
    for (const issuer of running) await issuer.close();
    await database?.drop();
  });

  it('keeps keys and clients across a restart: a token minted before still verifies against the JWKS after', async () => {
    const first = await start();
    const registered = await sendJson(first.registrationEndpoint, 'POST', REGISTRATION_TOKEN, {});
    const basic = { clientId: registered.body.client_id as string, clientSecret: registered.body.client_secret as string };
    const before = (await requestToken(first.tokenEndpoint, { basic })).body.access_token as string;
    const kid = first.signingKid;
    const port = Number(new URL(first.url).port);
    await first.close();

    const second = await start({ port });
    assert.equal(second.url, first.url);
    assert.equal(second.signingKid, kid);
    await verifiesNow(second, before, first);
    const after = await requestToken(second.tokenEndpoint, { basic });
    assert.equal(after.status, 200, JSON.stringify(after.body));
    assert.equal(decodeProtectedHeader(after.body.access_token as string).kid, kid);
  });

  it('rotates with an overlap: the next key is published before it signs, the old one stays published, and replicas agree', async () => {
    // A key signs for 6 s, its successor published 3 s ahead; the replicas look every 100 ms.
    // The limits are lifted: the test asks for a token every 50 ms while it waits.
    const generous = { burst: 10_000, perSecond: 10_000 };
    const rotation = {
      keyRotation: { rotateAfterMs: 6_000, publishAheadMs: 3_000, keepAfterRetiredMs: 600_000 },
      keyCheckIntervalMs: 100,
      tokenEndpointLimits: { perAddress: generous, perClient: generous, failedPerAddress: generous },
    };
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query('DELETE FROM issuer_signing_keys');
    await client.end();
    const replicaA = await start(rotation);
    const replicaB = await start(rotation);
    assert.equal(replicaB.signingKid, replicaA.signingKid, 'both replicas sign with the key the first one made');
    const oldKid = replicaA.signingKid;
    const registered = await sendJson(replicaA.registrationEndpoint, 'POST', REGISTRATION_TOKEN, {});
    const basic = { clientId: registered.body.client_id as string, clientSecret: registered.body.client_secret as string };
    const oldToken = (await requestToken(replicaA.tokenEndpoint, { basic })).body.access_token as string;

    // The successor appears in both JWKS while the old key still signs.
    const published = await eventually('a second key published', () => publishedKids(replicaB), (kids) => kids.length === 2, 10_000);
    const newKid = published.find((kid) => kid !== oldKid) as string;
    // Each replica reads the keys on its own schedule: the other one publishes the successor too, soon.
    await eventually('the other replica publishing the successor', () => publishedKids(replicaA), (kids) => kids.includes(newKid), 10_000);

    // Then it signs, on both replicas, and the old key stays published: the old token still verifies.
    for (const replica of [replicaA, replicaB]) {
      await eventually(
        'new tokens signed with the new key',
        async () => decodeProtectedHeader((await requestToken(replica.tokenEndpoint, { basic })).body.access_token as string).kid,
        (kid) => kid === newKid,
        15_000,
      );
      assert.ok((await publishedKids(replica)).includes(oldKid), 'the old key is still published');
      await verifiesNow(replica, oldToken, replicaA);
    }
  });
});
