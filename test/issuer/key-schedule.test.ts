import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planKeys, type KeyRotationPolicy, type ScheduledKey } from '../../src/issuer/signing-keys.js';

const POLICY: KeyRotationPolicy = { rotateAfterMs: 30_000, publishAheadMs: 5_000, keepAfterRetiredMs: 10_000 };
const key = (kid: string, createdAt: number, signsFrom = createdAt): ScheduledKey => ({ kid, createdAt, signsFrom });

describe('the signing key schedule', () => {
  it('makes the first key to sign at once', () => {
    assert.deepEqual(planKeys([], 1_000, POLICY), { signingKid: undefined, publishedKids: [], newKeySignsFrom: 1_000, withdrawnKids: [] });
  });

  it('keeps signing with a key before its successor is due', () => {
    const plan = planKeys([key('a', 0)], 24_999, POLICY);
    assert.equal(plan.signingKid, 'a');
    assert.equal(plan.newKeySignsFrom, undefined);
  });

  it('publishes the successor ahead: it signs when the key has signed its time, not before', () => {
    const plan = planKeys([key('a', 0)], 25_000, POLICY);
    assert.equal(plan.newKeySignsFrom, 30_000);
    const late = planKeys([key('a', 0)], 40_000, POLICY);
    assert.equal(late.newKeySignsFrom, 45_000, 'a late check still publishes the successor for the whole lead');
  });

  it('publishes a pending key beside the signing one, and makes no other meanwhile', () => {
    const plan = planKeys([key('a', 0), key('b', 25_000, 30_000)], 29_999, POLICY);
    assert.equal(plan.signingKid, 'a');
    assert.deepEqual(plan.publishedKids, ['a', 'b']);
    assert.equal(plan.newKeySignsFrom, undefined);
  });

  it('signs with the successor once its time has come, keeping the retired key published for the retention', () => {
    const keys = [key('a', 0), key('b', 25_000, 30_000)];
    const switched = planKeys(keys, 30_000, POLICY);
    assert.equal(switched.signingKid, 'b');
    assert.deepEqual(switched.publishedKids, ['b', 'a']);
    assert.deepEqual(switched.withdrawnKids, []);
    const retained = planKeys(keys, 39_999, POLICY);
    assert.deepEqual(retained.publishedKids, ['b', 'a']);
    const withdrawn = planKeys(keys, 40_000, POLICY);
    assert.deepEqual(withdrawn.publishedKids, ['b']);
    assert.deepEqual(withdrawn.withdrawnKids, ['a']);
  });

  it('orders by signing time whatever order the rows come in', () => {
    const plan = planKeys([key('c', 55_000, 60_000), key('a', 0), key('b', 25_000, 30_000)], 61_000, POLICY);
    assert.equal(plan.signingKid, 'c');
    assert.deepEqual(plan.publishedKids, ['c', 'b'], 'b retired 1 s ago');
    assert.deepEqual(plan.withdrawnKids, ['a'], 'a retired 31 s ago');
  });

  it('signs with the first published key when every key is yet to sign, rather than with none', () => {
    const plan = planKeys([key('b', 1_000, 1_500)], 1_000, POLICY);
    assert.equal(plan.signingKid, 'b');
    assert.deepEqual(plan.publishedKids, ['b']);
    assert.equal(plan.newKeySignsFrom, undefined);
  });
});
