import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TurnBatch } from '../../src/observe/turn-batch.js';

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('TurnBatch: the events of one turn of the event loop, observed together after it', () => {
  it('observes nothing while the turn runs, then every event in the order added, with one clock reading', async () => {
    const seen: Array<[string, number]> = [];
    const batch = new TurnBatch<string>((event, now) => seen.push([event, now]), assert.fail);
    batch.add('first');
    batch.add('second');
    batch.add('third');
    assert.equal(seen.length, 0, 'nothing observed during the turn');
    await nextTurn();
    assert.deepEqual(
      seen.map(([event]) => event),
      ['first', 'second', 'third'],
    );
    assert.equal(new Set(seen.map(([, now]) => now)).size, 1);
    assert.ok(Math.abs(seen[0]![1] - Date.now()) < 60_000, 'now is the epoch in milliseconds');
  });

  it('starts a new batch for events added after a flush', async () => {
    const seen: string[] = [];
    const batch = new TurnBatch<string>((event) => seen.push(event), assert.fail);
    batch.add('one');
    await nextTurn();
    batch.add('two');
    await nextTurn();
    assert.deepEqual(seen, ['one', 'two']);
  });

  it('hands an observer failure to onError with its event, and still observes the others', async () => {
    const seen: string[] = [];
    const failures: Array<[string, string]> = [];
    const batch = new TurnBatch<string>(
      (event) => {
        if (event === 'bad') throw new Error('observer broke');
        seen.push(event);
      },
      (error, event) => failures.push([(error as Error).message, event]),
    );
    for (const event of ['a', 'bad', 'b']) batch.add(event);
    await nextTurn();
    assert.deepEqual(seen, ['a', 'b']);
    assert.deepEqual(failures, [['observer broke', 'bad']]);
  });

  it('flush() observes what is pending at once, and the turn finds nothing left to observe twice', async () => {
    const seen: string[] = [];
    const batch = new TurnBatch<string>((event) => seen.push(event), assert.fail);
    batch.add('last check before shutdown');
    batch.flush();
    assert.deepEqual(seen, ['last check before shutdown']);
    await nextTurn();
    assert.deepEqual(seen, ['last check before shutdown']);
  });
});
