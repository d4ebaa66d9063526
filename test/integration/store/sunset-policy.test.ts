import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { loadSunsetPolicy, seedSunsetPolicy, writeSunsetPolicy } from '../../../src/store/sunset-policy.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { eventually } from '../../support/eventually.js';

const POLICY = { sunsetAt: Date.parse('2026-12-31T23:59:59Z'), enforce: false, guideUrl: undefined };

describe('the stored sunset policy', () => {
  let database: TestDatabase;
  let sql: pg.Client;
  let listener: pg.Client;
  const heard: string[] = [];

  before(async () => {
    database = await freshDatabase();
    sql = new pg.Client({ connectionString: database.url });
    listener = new pg.Client({ connectionString: database.url });
    await Promise.all([sql.connect(), listener.connect()]);
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query('LISTEN sitekey_credentials');
  });

  after(async () => {
    await Promise.all([sql?.end(), listener?.end()]);
    await database?.drop();
  });

  it('is seeded once, with one notification; a later seed changes nothing and tells nobody', async () => {
    assert.equal(await loadSunsetPolicy(sql), undefined);
    assert.equal(await seedSunsetPolicy(sql, POLICY), true);
    await eventually('the seed was notified', async () => heard.length, (count) => count === 1, 5_000);
    assert.deepEqual(heard, ['*']);
    assert.equal(await seedSunsetPolicy(sql, { ...POLICY, enforce: true }), false);
    await sql.query("SELECT pg_notify('sitekey_credentials', 'marker')");
    await eventually('the marker arrived', async () => heard.at(-1), (last) => last === 'marker', 5_000);
    assert.deepEqual(heard, ['*', 'marker'], 'the second seed sent nothing');
    assert.equal((await loadSunsetPolicy(sql))?.enforce, false);
  });

  it('refuses what no process could use, whoever writes it', async () => {
    for (const [column, value] of [
      ['sunset_at', 'infinity'],
      ['guide_url', 'http://developers.example.com/'],
      ['guide_url', 'https://developers.example.com/a b'],
      ['guide_url', 'https://developers.example.com/\u0001'],
      ['guide_url', 'https://developers.example.com/über'],
    ] as const) {
      await assert.rejects(sql.query(`UPDATE sunset_policy SET ${column} = $1`, [value]), /violates check constraint/, `${column} = ${value}`);
    }
    await writeSunsetPolicy(sql, { ...POLICY, guideUrl: 'https://developers.example.com/migrate?from=keys#step-1' });
    assert.equal((await loadSunsetPolicy(sql))?.guideUrl, 'https://developers.example.com/migrate?from=keys#step-1');
  });
});
