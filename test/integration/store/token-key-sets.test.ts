import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { tokenKeySetStore } from '../../../src/store/token-key-sets.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

const RSA = (kid: string) => ({ kty: 'RSA', kid, n: 'AQAB-n', e: 'AQAB' });

describe("the token issuer's last good key set in token_key_sets", () => {
  let database: TestDatabase;
  let sql: pg.Client;

  before(async () => {
    database = await freshDatabase();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
  });

  after(async () => {
    await sql?.end();
    await database?.drop();
  });

  it('reads back what was written, one row per source, and never replaces a set fetched later', async () => {
    const byUrl = tokenKeySetStore(sql, { kind: 'jwks_url', value: 'https://login.example.com/jwks' });
    const byIssuer = tokenKeySetStore(sql, { kind: 'issuer', value: 'https://login.example.com/jwks' });
    assert.equal(await byUrl.load(), undefined);
    await byUrl.save({ keys: [RSA('new')] }, Date.parse('2026-11-20T10:00:00Z'));
    await byUrl.save({ keys: [RSA('old')] }, Date.parse('2026-11-20T09:00:00Z'));
    assert.deepEqual(await byUrl.load(), { jwks: { keys: [RSA('new')] }, fetchedAt: Date.parse('2026-11-20T10:00:00Z') });
    assert.equal(await byIssuer.load(), undefined, 'an issuer is another source than a JWKS URL of the same text');
    await byUrl.save({ keys: [RSA('newer')] }, Date.parse('2026-11-20T11:00:00Z'));
    assert.deepEqual((await byUrl.load())?.jwks, { keys: [RSA('newer')] });
  });

  it('keeps no fetch time later than the database clock, so that a process whose clock runs ahead cannot freeze the row', async () => {
    const store = tokenKeySetStore(sql, { kind: 'jwks_url', value: 'https://clock.example.com/jwks' });
    await store.save({ keys: [RSA('from-the-future')] }, Date.now() + 365 * 86_400_000);
    const stored = await store.load();
    assert.ok(stored !== undefined && stored.fetchedAt <= Date.now() + 60_000, 'the fetch time is the database clock at most');
    await store.save({ keys: [RSA('later')] }, Date.now() + 1_000);
    assert.deepEqual((await store.load())?.jwks, { keys: [RSA('later')] }, 'a later fetch replaces it');
  });

  it('refuses to read a stored set larger than any fetch', async () => {
    const store = tokenKeySetStore(sql, { kind: 'issuer', value: 'https://big.example.com' });
    await sql.query('ALTER TABLE token_key_sets DROP CONSTRAINT token_key_sets_jwks_check');
    await sql.query("INSERT INTO token_key_sets (source_kind, source, jwks, fetched_at) VALUES ('issuer', 'https://big.example.com', jsonb_build_object('keys', '[]'::jsonb, 'padding', repeat('x', 300000)), now())");
    await assert.rejects(store.load(), /larger than 262144 bytes/);
  });
});
