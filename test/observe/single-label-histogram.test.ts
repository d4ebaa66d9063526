import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AggregatorRegistry, Histogram, Registry } from 'prom-client';
import { SingleLabelHistogram } from '../../src/observe/single-label-histogram.js';

const NAME = 'test_check_duration_seconds';
const HELP = 'Time, by outcome.';
const BUCKETS = [0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];

/** The same observations into prom-client's own Histogram and into ours, each in a registry of its own. */
function both(observations: ReadonlyArray<[string, number]>, buckets: readonly number[] = BUCKETS) {
  const theirRegistry = new Registry();
  const ourRegistry = new Registry();
  const theirs = new Histogram({ name: NAME, help: HELP, labelNames: ['outcome'], buckets: [...buckets], registers: [theirRegistry] });
  const ours = new SingleLabelHistogram({ name: NAME, help: HELP, labelName: 'outcome', buckets, registers: [ourRegistry] });
  for (const [outcome, value] of observations) {
    theirs.observe({ outcome }, value);
    ours.observe(outcome, value);
  }
  return { theirRegistry, ourRegistry, ours };
}

const sequences: ReadonlyArray<[string, ReadonlyArray<[string, number]>]> = [
  ['no observation', []],
  ['one allowed check', [['allowed', 0.00004]]],
  [
    'values on bucket bounds, between them, below the first and beyond the last',
    [
      ['allowed', 0.000025],
      ['allowed', 0.00002500001],
      ['allowed', 0],
      ['allowed', 0.25],
      ['allowed', 0.3],
      ['allowed', 12],
    ],
  ],
  [
    'several outcomes, interleaved, in the order they first appear',
    [
      ['denied', 0.0003],
      ['allowed', 0.00004],
      ['unavailable', 0.00001],
      ['allowed', 0.0007],
      ['denied', 0.02],
      ['internal', 0.5],
      ['allowed', 0.1],
    ],
  ],
  ['a sum of many small values, rounded as prom-client rounds it', Array.from({ length: 1000 }, (_, i): [string, number] => ['allowed', 0.0000317 * ((i % 7) + 1)])],
];

describe('SingleLabelHistogram is exposed as prom-client exposes its own Histogram', () => {
  for (const [name, observations] of sequences) {
    it(`${name}: the same /metrics text, JSON and cluster aggregate`, async () => {
      const { theirRegistry, ourRegistry } = both(observations);
      assert.equal(await ourRegistry.metrics(), await theirRegistry.metrics());
      const [ourJson, theirJson] = [await ourRegistry.getMetricsAsJSON(), await theirRegistry.getMetricsAsJSON()];
      // prom-client's samples carry an empty exemplar (exemplars are off); nothing reads it.
      const withoutExemplars = (json: typeof ourJson) =>
        json.map((metric) => ({ ...metric, values: metric.values.map((sample) => ({ value: sample.value, labels: sample.labels, metricName: (sample as { metricName?: string }).metricName })) }));
      assert.deepEqual(withoutExemplars(ourJson), withoutExemplars(theirJson));
      // Two workers' worth, as prom-client's AggregatorRegistry adds them up under WORKERS.
      const aggregate = async (json: typeof ourJson) => AggregatorRegistry.aggregate([json, json]).metrics();
      assert.equal(await aggregate(ourJson), await aggregate(theirJson));
    });
  }

  it('forgets every series on reset, as the registry resets metrics', async () => {
    const { theirRegistry, ourRegistry } = both([['allowed', 0.001]]);
    theirRegistry.resetMetrics();
    ourRegistry.resetMetrics();
    assert.equal(await ourRegistry.metrics(), await theirRegistry.metrics());
  });

  it('refuses a value that is not a finite number, and buckets that do not ascend', () => {
    const { ours } = both([]);
    assert.throws(() => ours.observe('allowed', Number.NaN), TypeError);
    assert.throws(() => ours.observe('allowed', Infinity), TypeError);
    assert.throws(() => new SingleLabelHistogram({ name: 'x_seconds', help: 'x', labelName: 'outcome', buckets: [0.1, 0.1], registers: [] }), /ascend/);
  });
});
