import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import { startTestIssuer, TokenRequestRefused, type TestIssuer, type TestIssuerClient } from '../support/oidc-issuer.js';

/**
 * The test issuer is a real OpenID provider that the token tests trust to mint what the platform's
 * authorization server mints: these tests hold it to RFC 9068 with an independent verifier (jose), so
 * a token test that fails points at the service, not at its issuer.
 */
const partner: TestIssuerClient = { clientId: 'partner-1001', clientSecret: 'correct horse battery staple' };
const TTL_SECONDS = 120;

/** The checks RFC 9068 §4 asks of a resource server, against the key set the issuer publishes now. */
async function verifyAccessToken(issuer: TestIssuer, token: string, algorithms = ['RS256']): Promise<JWTPayload> {
  const { payload } = await jwtVerify(token, createRemoteJWKSet(new URL(issuer.jwksUrl)), {
    issuer: issuer.issuer,
    audience: issuer.audience,
    typ: 'at+jwt',
    algorithms,
    requiredClaims: ['exp', 'iat', 'jti', 'client_id', 'sub'],
  });
  return payload;
}

async function refusal(minting: Promise<string>): Promise<TokenRequestRefused> {
  const error = await minting.then(
    (token) => assert.fail(`the token endpoint issued a token: ${token.slice(0, 20)}…`),
    (reason: unknown) => reason,
  );
  assert.ok(error instanceof TokenRequestRefused, String(error));
  return error;
}

describe('the test OpenID provider (oidc-provider) for token tests', () => {
  let issuer: TestIssuer;

  before(async () => {
    issuer = await startTestIssuer({
      clients: [partner, { clientId: 'partner-1002', clientSecret: 'another secret' }],
      otherAudiences: ['https://other-api.test'],
      accessTokenTtlSeconds: TTL_SECONDS,
    });
  });

  after(() => issuer?.close());

  it('serves discovery on loopback, naming its issuer, JWKS and token endpoint', async () => {
    assert.match(issuer.issuer, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(issuer.audience, 'https://partner-api.test');
    const discovery = (await (await fetch(`${issuer.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    assert.equal(discovery.issuer, issuer.issuer);
    assert.equal(discovery.jwks_uri, issuer.jwksUrl);
    assert.equal(discovery.token_endpoint, issuer.tokenEndpoint);
    assert.ok((discovery.grant_types_supported as string[]).includes('client_credentials'));
  });

  it('mints an RFC 9068 JWT access token for the resource: typ at+jwt, RS256, the current kid, and its claims', async () => {
    const token = await issuer.mintAccessToken(partner);
    const header = decodeProtectedHeader(token);
    assert.equal(header.typ, 'at+jwt');
    assert.equal(header.alg, 'RS256');
    assert.equal(header.kid, issuer.signingKid);

    const claims = await verifyAccessToken(issuer, token);
    assert.equal(claims.iss, issuer.issuer);
    assert.deepEqual([claims.aud].flat(), [issuer.audience]);
    assert.equal(claims.client_id, partner.clientId);
    assert.equal(claims.sub, partner.clientId);
    assert.equal(typeof claims.jti, 'string');
    assert.equal(claims.exp! - claims.iat!, TTL_SECONDS);
    assert.ok(Math.abs(claims.iat! - Date.now() / 1000) < 60, `iat ${claims.iat} is now`);
    assert.equal(claims.scope, undefined);
  });

  it('mints a fresh token per request, for the client that asked, with the scope it asked for', async () => {
    const first = await issuer.mintAccessToken(partner, { scope: 'orders:read orders:write' });
    const other = await issuer.mintAccessToken({ clientId: 'partner-1002', clientSecret: 'another secret' });
    const [firstClaims, otherClaims] = await Promise.all([verifyAccessToken(issuer, first), verifyAccessToken(issuer, other)]);
    assert.equal(firstClaims.scope, 'orders:read orders:write');
    assert.equal(otherClaims.client_id, 'partner-1002');
    assert.notEqual(firstClaims.jti, otherClaims.jti);
  });

  it('mints for another registered resource a token whose audience is that resource, and refuses an unregistered one', async () => {
    const token = await issuer.mintAccessToken(partner, { resource: 'https://other-api.test' });
    await assert.rejects(verifyAccessToken(issuer, token), errors.JWTClaimValidationFailed);
    const { payload } = await jwtVerify(token, createRemoteJWKSet(new URL(issuer.jwksUrl)), { audience: 'https://other-api.test' });
    assert.equal(payload.aud, 'https://other-api.test');

    const refused = await refusal(issuer.mintAccessToken(partner, { resource: 'https://unknown-api.test' }));
    assert.equal(refused.error, 'invalid_target');
  });

  it('refuses a wrong client secret and an unknown client at the token endpoint (invalid_client, 401)', async () => {
    for (const client of [
      { clientId: partner.clientId, clientSecret: 'wrong secret' },
      { clientId: 'partner-9999', clientSecret: partner.clientSecret },
    ]) {
      const refused = await refusal(issuer.mintAccessToken(client));
      assert.equal(refused.status, 401, refused.message);
      assert.equal(refused.error, 'invalid_client', refused.message);
    }
  });

  it('rotates to a new signing key on the same URL; tokens signed before still verify against the new JWKS', async () => {
    const issuerUrl = issuer.issuer;
    const oldKid = issuer.signingKid;
    const before = await issuer.mintAccessToken(partner);

    const { kid: newKid } = await issuer.rotateSigningKey();
    assert.notEqual(newKid, oldKid);
    assert.equal(issuer.signingKid, newKid);
    assert.equal(issuer.issuer, issuerUrl);

    const published = (await (await fetch(issuer.jwksUrl)).json()) as { keys: Array<{ kid: string; d?: string }> };
    assert.deepEqual(published.keys.map((key) => key.kid).sort(), [oldKid, newKid].sort());
    assert.ok(published.keys.every((key) => key.d === undefined), 'the JWKS publishes public keys only');

    const after = await issuer.mintAccessToken(partner);
    assert.equal(decodeProtectedHeader(after).kid, newKid);
    assert.equal(decodeProtectedHeader(before).kid, oldKid);
    const [beforeClaims, afterClaims] = await Promise.all([verifyAccessToken(issuer, before), verifyAccessToken(issuer, after)]);
    assert.equal(beforeClaims.iss, issuerUrl);
    assert.equal(afterClaims.iss, issuerUrl);
  });
});

describe('test issuers are independent of each other', () => {
  it('signs with ES256, PS256 and EdDSA when asked', async () => {
    for (const signingAlgorithm of ['ES256', 'PS256', 'EdDSA'] as const) {
      const issuer = await startTestIssuer({ clients: [partner], signingAlgorithm });
      try {
        const token = await issuer.mintAccessToken(partner);
        assert.equal(decodeProtectedHeader(token).alg, signingAlgorithm);
        const claims = await verifyAccessToken(issuer, token, [signingAlgorithm]);
        assert.equal(claims.client_id, partner.clientId);
      } finally {
        await issuer.close();
      }
    }
  });

  it("a token of one issuer does not verify against another's keys, and a closed issuer answers nothing", async () => {
    const [one, other] = await Promise.all([startTestIssuer({ clients: [partner] }), startTestIssuer({ clients: [partner] })]);
    try {
      const token = await one.mintAccessToken(partner);
      await assert.rejects(
        jwtVerify(token, createRemoteJWKSet(new URL(other.jwksUrl)), { algorithms: ['RS256'] }),
        errors.JWKSNoMatchingKey,
      );
    } finally {
      await Promise.all([one.close(), other.close()]);
    }
    await assert.rejects(fetch(one.jwksUrl), TypeError);
  });
});
