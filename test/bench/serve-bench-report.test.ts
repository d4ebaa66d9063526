import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { processSpread, roundsTable } from '../../bench/serve-bench-report.js';
import type { LoadRun } from '../../bench/serve-bench.js';

function run(server: string, requestsPerSecond: number): LoadRun {
  return { server, h2load: [], checks: requestsPerSecond * 10, requestsPerSecond, cpuMicrosPerCheck: 1, allocatedBytesPerCheck: 1, gcMicrosPerCheck: 1, collections: [], processes: 1, seconds: 10 };
}

describe('bench report: serve against its floor over pairs of processes', () => {
  it('numbers rounds and pairs, and takes the ratio of the medians over every pair and round', () => {
    // Two rounds of three pairs; the third pair's floor is the slow process, whose luck a single pair would report.
    const rates = [
      [9_000, 10_000],
      [9_400, 10_200],
      [9_200, 8_000],
      [9_100, 10_100],
      [9_300, 10_300],
      [9_500, 8_100],
    ] as const;
    const rounds = rates.map(([serve, floor], index) => ({ serve: run('serve', serve), noop: run('no-op', floor), pair: (index % 3) + 1 }));
    const table = roundsTable('no-op', rounds);
    assert.equal(table[2], '| 1 | 1 | 9,000 | 10,000 | 90 % |');
    assert.equal(table[5], '| 2 | 1 | 9,100 | 10,100 | 90 % |');
    assert.equal(table[7], '| 2 | 3 | 9,500 | 8,100 | 117 % |');
    // Medians of all six: serve 9,250, floor 10,050.
    assert.equal(table.at(-1), '| median | | 9,250 | 10,050 | **92 %** |');
    assert.equal(processSpread(rounds), 'In this run the 3 no-op processes ran at 10,050, 10,250, 8,050 req/s (each the median of its rounds).');
    assert.equal(processSpread(rounds.filter((r) => r.pair === 1)), '');
  });
});
