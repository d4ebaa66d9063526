import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyCutoff } from '../../src/store/sunset-reports.js';

const DAY = 86_400_000;
const SUNSET = Date.parse('2026-12-31T23:59:59Z');

/** The migration report's cut-off and days left: a partner with any part of a day left has that day. */
describe('keyCutoff', () => {
  const cases: Array<[string, Date | number | null, number, number | null]> = [
    ['a day and a half before the sunset: 2 days', null, SUNSET - 1.5 * DAY, 2],
    ['exactly one day before: 1', null, SUNSET - DAY, 1],
    ['a millisecond before: 1, not 0', null, SUNSET - 1, 1],
    ['at the sunset: 0', null, SUNSET, 0],
    ['past it: 0, never negative', null, SUNSET + 3 * DAY, 0],
    ['a grace later than the sunset counts from the grace', new Date(SUNSET + 10 * DAY), SUNSET - DAY / 2, 11],
    ['a grace earlier than the sunset counts from the sunset', new Date(SUNSET - 10 * DAY), SUNSET - DAY / 2, 1],
    ['a grace written as infinity never ends: no count', Infinity, SUNSET, null],
  ];
  for (const [name, grace, now, daysLeft] of cases) {
    it(name, () => {
      assert.equal(keyCutoff(grace as never, SUNSET, now).daysLeft, daysLeft);
    });
  }

  it('names the later of the sunset and the grace as the cut-off', () => {
    assert.equal(keyCutoff(null, SUNSET, 0).cutoffAt, '2026-12-31T23:59:59.000Z');
    assert.equal(keyCutoff(new Date(SUNSET + DAY), SUNSET, 0).cutoffAt, '2027-01-01T23:59:59.000Z');
    assert.equal(keyCutoff(Infinity as never, SUNSET, 0).cutoffAt, 'infinity');
  });
});
