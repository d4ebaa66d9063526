import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { authorizationClient, check, verdict, type UpstreamCheckResponse } from '../../support/envoy-client.js';
import { eventually } from '../../support/eventually.js';
import { startTestIssuer, type TestIssuer, type TestIssuerClient } from '../../support/oidc-issuer.js';
import { runCli, startService, type RunningService } from '../../support/service.js';

const PARTNER: TestIssuerClient = { clientId: 'partner-1001', clientSecret: 'secret-of-partner-1001' };
const UNREGISTERED: TestIssuerClient = { clientId: 'partner-typo', clientSecret: 'secret-of-partner-typo' };
const STAFF: TestIssuerClient = { clientId: 'staff-portal', clientSecret: 'secret-of-staff-portal' };
const OTHER_API = 'https://billing-api.test';
const GUIDE = 'https://developers.example.com/tokens';

const header = (response: UpstreamCheckResponse, name: string): string[] =>
  (response.denied_response?.headers ?? []).filter((option) => option.header?.key === name).map((option) => option.header?.value ?? '');

function message(response: UpstreamCheckResponse): string {
  return (JSON.parse(response.denied_response?.body ?? '{}') as { error: { message: string } }).error.message;
}

/**
 * The mistakes a migrating partner makes, each answered through a real serve with the fix: a token
 * requested without resource (the issuer hands out an opaque token), one for another API, one of
 * another issuer, a client nobody registered; and a key during a brownout is told when to come back.
 */
describe('errors that say the fix, through a real serve and real issuers', () => {
  let database: TestDatabase;
  let issuer: TestIssuer;
  let staffIssuer: TestIssuer;
  let service: RunningService;
  let client: ReturnType<typeof authorizationClient>;
  let key: string;
  let brownoutEnd: string;

  const cli = async (...args: string[]) => {
    const result = await runCli(database.url, args);
    assert.equal(result.code, 0, result.stderr);
    return result.stdout;
  };
  const bearer = async (token: string) => check(client, { authorization: `Bearer ${token}` });

  before(async () => {
    database = await freshDatabase();
    [issuer, staffIssuer] = await Promise.all([
      startTestIssuer({ clients: [PARTNER, UNREGISTERED], otherAudiences: [OTHER_API] }),
      // The organisation's own sign-in, minting tokens for the same API name: only its iss tells them apart.
      startTestIssuer({ clients: [STAFF] }),
    ]);
    await cli('site', 'add', '1001');
    await cli('ip', 'allow', '1001', '203.0.113.0/24');
    key = (JSON.parse(await cli('key', 'issue', '1001', '--json')) as { apiKey: string }).apiKey;
    await cli('token-client', 'add', '1001', PARTNER.clientId);
    await cli('sunset', 'set', '--at', '2027-06-30T00:00:00.000Z', '--no-enforce', '--guide', GUIDE);
    // Whole seconds, as an HTTP-date carries them.
    brownoutEnd = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3_600_000).toISOString();
    await cli('brownout', 'add', '--from', new Date(Date.now() - 60_000).toISOString(), '--until', brownoutEnd, '--site', '1001');
    service = await startService({
      DATABASE_URL: database.url,
      MIGRATE_ON_START: 'false',
      TOKEN_ISSUER: issuer.issuer,
      TOKEN_AUDIENCE: issuer.audience,
      TOKEN_JWKS_URL: issuer.jwksUrl,
    });
    client = authorizationClient(service.grpcTarget);
  });

  after(async () => {
    client?.close();
    await service?.stop();
    await Promise.all([issuer?.close(), staffIssuer?.close()]);
    await database?.drop();
  });

  it('a token requested without resource (an opaque token) → 106: request it with resource=<TOKEN_AUDIENCE>', async () => {
    const opaque = await issuer.mintAccessToken(PARTNER, { resource: null });
    assert.equal(opaque.split('.').length, 1, 'the issuer handed out an opaque token');
    const response = await bearer(opaque);
    assert.equal(verdict(response), 106);
    const description = `the token is not a signed JWT (JWS compact serialization); request it from the token endpoint with resource=${issuer.audience} to get a JWT access token for this API`;
    assert.equal(message(response), `Access token is invalid: ${description}`);
    assert.deepEqual(header(response, 'www-authenticate'), [`Bearer error="invalid_token", error_description="${description}"`]);
  });

  it('a token for another API → 106 naming the audience to ask for', async () => {
    const response = await bearer(await issuer.mintAccessToken(PARTNER, { resource: OTHER_API }));
    assert.equal(verdict(response), 106);
    assert.equal(message(response), `Access token is invalid: the token audience (aud) does not include this API; request the token with resource=${issuer.audience}`);
  });

  it("another issuer's token (a staff token, its kid unknown here) → 106 saying it is another issuer's, not that the kid is unknown", async () => {
    const response = await bearer(await staffIssuer.mintAccessToken(STAFF));
    assert.equal(verdict(response), 106);
    assert.equal(
      message(response),
      'Access token is invalid: the token was issued by another issuer (iss) than the one this API trusts; request it from the token endpoint you were given for this API',
    );
  });

  it('a client nobody registered → 107 telling the partner who registers it', async () => {
    const response = await bearer(await issuer.mintAccessToken(UNREGISTERED));
    assert.equal(verdict(response), 107);
    assert.equal(message(response), 'Token client partner-typo is not registered for any site; ask your account manager to register client partner-typo for your site');
  });

  it("a key during a brownout → 105 with Retry-After at the brownout's end and the guide's Link", async () => {
    const response = await eventually(
      'the brownout in force',
      () => check(client, { authorization: `1001:${key}`, body: JSON.stringify({ siteid: 1001, apikey: key }) }),
      (answer) => verdict(answer) === 105,
      10_000,
    );
    assert.match(message(response), /for a scheduled brownout/);
    assert.deepEqual(header(response, 'retry-after'), [new Date(brownoutEnd).toUTCString()]);
    assert.deepEqual(header(response, 'link'), [`<${GUIDE}>; rel="deprecation"`, `<${GUIDE}>; rel="sunset"`]);
  });
});
