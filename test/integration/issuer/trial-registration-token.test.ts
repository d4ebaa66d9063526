import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { trialRegistrationToken } from '../../../src/issuer/trial-registration-token.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

/** The registration token of an issuer tried out on loopback: made once per database, the same at every start after. */
describe("the issuer's trial registration token", () => {
  let database: TestDatabase;
  let pool: pg.Pool;

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 4 });
  });

  after(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('is made by one of the starts that race for it, and every start, then and later, takes that one', async () => {
    const racing = await Promise.all([trialRegistrationToken(pool), trialRegistrationToken(pool), trialRegistrationToken(pool)]);
    assert.equal(new Set(racing.map((kept) => kept.token)).size, 1);
    assert.deepEqual(racing.map((kept) => kept.madeNow).filter(Boolean), [true]);
    assert.match(racing[0]!.token, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(await trialRegistrationToken(pool), { token: racing[0]!.token, madeNow: false });
  });

  it('refuses a kept row that is no token (changed by hand), saying how to get a new one', async () => {
    await pool.query("UPDATE issuer_trial_registration_token SET token = repeat('x', 31) || E'\\n\\u001b[2J'");
    await assert.rejects(trialRegistrationToken(pool), /is not one \(changed by hand\?\): delete that row to have a new one made, or set ISSUER_REGISTRATION_TOKEN/);
    await pool.query('DELETE FROM issuer_trial_registration_token');
    assert.equal((await trialRegistrationToken(pool)).madeNow, true);
  });
});
