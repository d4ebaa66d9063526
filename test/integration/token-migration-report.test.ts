import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { authorizationClient, check, verdict } from '../support/envoy-client.js';
import { eventually } from '../support/eventually.js';
import { JwksServer, signedToken, signingKey } from '../support/jwks-server.js';
import { runCli, startService, type RunningService } from '../support/service.js';
import type { MigrationSiteRow } from '../../src/store/sunset-reports.js';

const ISSUER = 'https://login.example.com/realms/partners';
const AUDIENCE = 'https://partner-api.example.com';
const SITE = '1001';
const CLIENT = 'partner-1001';

/** A row of `report migration --sites --json`, as the store makes it. */
type SiteRow = MigrationSiteRow;

/**
 * A site's move from keys to tokens as an account manager follows it: requests through a real
 * `serve`, counted by its replicas' recorder, read back by `report migration --sites`.
 */
describe('report migration --sites, end to end through serve', () => {
  let database: TestDatabase;
  let jwks: JwksServer;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;
  let apiKey: string;
  let token: string;
  let keysAllowed = 0;

  const cli = async (...args: string[]) => {
    const result = await runCli(database.url, args);
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };
  const byKey = async () => {
    const answer = verdict(await check(client, { authorization: `${SITE}:${apiKey}`, body: JSON.stringify({ siteid: Number(SITE), apikey: apiKey }) }));
    if (answer === 'allow') keysAllowed += 1;
    return answer;
  };
  const byToken = async () => verdict(await check(client, { authorization: `Bearer ${token}`, body: JSON.stringify({ order: 1 }) }));
  const site = async () => (JSON.parse(await cli('report', 'migration', '--sites', '--json')) as SiteRow[]).find((row) => row.siteId === SITE);

  before(async () => {
    database = await freshDatabase();
    await cli('site', 'add', SITE);
    await cli('ip', 'allow', SITE, '203.0.113.0/24');
    apiKey = (JSON.parse(await cli('key', 'issue', SITE, '--json')) as { apiKey: string }).apiKey;
    await cli('token-client', 'add', SITE, CLIENT);
    const key = await signingKey('issuer-1');
    jwks = await JwksServer.start();
    jwks.publish([key]);
    const now = Math.floor(Date.now() / 1000);
    // Issued after the client was registered: a token from before its registration is refused as revoked.
    token = await signedToken(key, { iss: ISSUER, aud: AUDIENCE, sub: CLIENT, client_id: CLIENT, iat: now, exp: now + 600 });
    service = await startService({
      DATABASE_URL: database.url,
      MIGRATE_ON_START: 'false',
      LAST_USED_FLUSH_SECONDS: '1',
      TOKEN_ISSUER: ISSUER,
      TOKEN_AUDIENCE: AUDIENCE,
      TOKEN_JWKS_URL: jwks.url,
    });
    client = authorizationClient(service.grpcTarget);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await jwks?.close();
    await database?.drop();
  });

  it('shows the share on tokens while the site sends both, and no one refused once it is on tokens', async () => {
    for (let i = 0; i < 2; i++) assert.equal(await byKey(), 'allow');
    for (let i = 0; i < 3; i++) assert.equal(await byToken(), 'allow');
    const moving = await eventually('the recorder has written both methods', site, (row) => row?.tokenRequests === 3 && row.keyRequests === 2, 10_000);
    assert.equal(moving?.authMethod, 'both');
    assert.equal(moving?.tokenShare, 0.6);
    assert.equal(moving?.wouldRefuseOnTokens, true, 'keys were used in the window: tokens-only would refuse them');
    assert.ok(moving?.lastTokenUseAt !== null && Date.parse(moving?.lastTokenUseAt ?? '') > Date.now() - 60_000, JSON.stringify(moving));

    await cli('site', 'auth', SITE, 'tokens');
    await eventually('the site is tokens-only in serve', byKey, (answer) => answer === 105, 5_000);
    assert.equal(await byToken(), 'allow');
    const switched = await eventually('the report sees the switch and the new token request', site, (row) => row?.tokenRequests === 4, 10_000);
    assert.equal(switched?.authMethod, 'tokens');
    // Those let through until the switch reached serve count; the 105s after it do not.
    assert.equal(switched?.keyRequests, keysAllowed, 'allowed key requests are counted, refused ones are not');
    assert.equal(switched?.wouldRefuseOnTokens, false, 'already on tokens: switching refuses no one more');
  });
});
