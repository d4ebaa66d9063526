import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { IncompleteRequestBudget } from '../../src/envoy/incomplete-requests.js';

describe('IncompleteRequestBudget', () => {
  /** A budget, the requests it ended (by name, in order) and how many resets it counted. */
  function budgetOf(bytes: number) {
    const ended: string[] = [];
    let resets = 0;
    const budget = new IncompleteRequestBudget(bytes, () => resets++);
    const begin = (name: string) => budget.begin(() => ended.push(name));
    return { budget, ended, begin, resets: () => resets };
  }

  it('holds the bytes of incomplete requests and lets them go as each completes', () => {
    const { budget, begin, ended } = budgetOf(100);
    const a = begin('a');
    const b = begin('b');
    a.received(30);
    b.received(20);
    assert.equal(budget.held, 50);
    a.complete();
    assert.equal(budget.held, 20);
    a.complete();
    a.received(10);
    assert.equal(budget.held, 20, 'a completed request holds nothing more');
    b.complete();
    assert.equal(budget.held, 0);
    assert.deepEqual(ended, []);
  });

  it('ends the oldest incomplete requests, oldest first, until the total fits again', () => {
    const { budget, begin, ended, resets } = budgetOf(100);
    const a = begin('a');
    const b = begin('b');
    const c = begin('c');
    const d = begin('d');
    a.received(40);
    b.received(40);
    c.received(10);
    b.complete();
    d.received(80);
    // a (40) goes, then c (10): 130, 90 with the 80 of d.
    assert.deepEqual(ended, ['a']);
    assert.equal(budget.held, 90);
    d.received(20);
    assert.deepEqual(ended, ['a', 'c']);
    assert.equal(budget.held, 100);
    assert.equal(resets(), 2);
    a.received(50);
    assert.equal(budget.held, 100, 'an ended request holds nothing more');
  });

  it('ends the request that took it over when that is the oldest, and stays whole when ending one completes another', () => {
    const { budget, begin, ended } = budgetOf(10);
    const a = begin('a');
    a.received(11);
    assert.deepEqual(ended, ['a']);
    assert.equal(budget.held, 0);
    // Ending a request may complete another (its stream closed): the list stays whole.
    const ends: Array<() => void> = [];
    const first = budget.begin(() => ends.forEach((end) => end()));
    const second = begin('second');
    ends.push(() => second.complete());
    second.received(4);
    first.received(7);
    assert.equal(budget.held, 0);
    const third = begin('third');
    third.received(10);
    assert.equal(budget.held, 10);
    assert.deepEqual(ended, ['a']);
  });

  it('lets requests begin and complete without allocating in V8\'s old generation, which only a full collection frees', () => {
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const oldSpaceUsed = () => getHeapSpaceStatistics().find((space) => space.space_name === 'old_space')!.space_used_size;
    const { begin } = budgetOf(1_000);
    begin('first').complete();
    // Two full collections move the budget into the old generation, where a server's lives.
    collect();
    collect();
    const requests = 20_000;
    const before = oldSpaceUsed();
    for (let i = 0; i < requests; i++) {
      const request = begin('one');
      request.received(100);
      request.complete();
    }
    const perRequest = (oldSpaceUsed() - before) / requests;
    // A Set of the open requests took some 130 bytes a request: a new table each time it emptied.
    assert.ok(perRequest < 16, `${perRequest.toFixed(1)} bytes of the old generation a request`);
  });
});
