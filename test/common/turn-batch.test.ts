import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TurnBatch } from '../../src/common/turn-batch.js';

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('TurnBatch: what arrives in one turn of the event loop, handled together after it', () => {
  it('handles nothing while the turn runs, then everything added in it, in order, at once', async () => {
    const batches: string[][] = [];
    const batch = new TurnBatch<string>((items) => batches.push([...items]));
    batch.add('first');
    batch.add('second');
    batch.add('third');
    assert.equal(batches.length, 0, 'nothing handled during the turn');
    await nextTurn();
    assert.deepEqual(batches, [['first', 'second', 'third']]);
  });

  it('starts a new batch for what arrives after one was handled', async () => {
    const batches: string[][] = [];
    const batch = new TurnBatch<string>((items) => batches.push([...items]));
    batch.add('one');
    await nextTurn();
    batch.add('two');
    batch.add('three');
    await nextTurn();
    assert.deepEqual(batches, [['one'], ['two', 'three']]);
  });

  it('puts what arrives while a batch is handled into the next batch', async () => {
    const batches: string[][] = [];
    const batch: TurnBatch<string> = new TurnBatch<string>((items) => {
      batches.push([...items]);
      if (items.includes('first')) batch.add('added while handling');
    });
    batch.add('first');
    await nextTurn();
    await nextTurn();
    assert.deepEqual(batches, [['first'], ['added while handling']]);
  });
});
