import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { affinityCpus, cpuPlan } from '../../bench/cpu-pinning.js';

describe('bench CPU pinning', () => {
  it('reads the CPUs of taskset -c -p output, ranges and lists alike', () => {
    assert.deepEqual(affinityCpus("pid 4242's current affinity list: 0,1\n"), [0, 1]);
    assert.deepEqual(affinityCpus("pid 7's current affinity list: 0-2,5,8-9"), [0, 1, 2, 5, 8, 9]);
    assert.equal(affinityCpus('taskset: failed to get pid 1 affinity'), undefined);
  });

  it('is off with BENCH_PIN=0', () => {
    assert.equal(cpuPlan({ BENCH_PIN: '0' }), undefined);
  });
});
