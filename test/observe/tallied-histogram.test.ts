import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AggregatorRegistry, Histogram, Registry, type Metric } from 'prom-client';
import { TalliedHistogram } from '../../src/observe/tallied-histogram.js';

const NAME = 'sitekey_authz_test_duration_seconds';
const HELP = 'A duration, by outcome.';
const BOUNDS = [0.000025, 0.0001, 0.001, 0.01, 0.25];
// On the bounds, between them, below the first and beyond the last; three label values, interleaved.
const OBSERVATIONS: ReadonlyArray<readonly [string, number]> = [
  ['allowed', 0.00004],
  ['denied', 0.000025],
  ['allowed', 0.000001],
  ['unavailable', 3],
  ['allowed', 0.25],
  ['denied', 0.0099],
  ['allowed', 0.0001],
  ['unavailable', 0.00002],
  ['allowed', 1e-9],
];

function both(observations: ReadonlyArray<readonly [string, number]> = OBSERVATIONS) {
  const library = new Registry();
  const histogram = new Histogram({ name: NAME, help: HELP, labelNames: ['outcome'], buckets: BOUNDS, registers: [library] });
  const ours = new Registry();
  const tallied = new TalliedHistogram(NAME, HELP, 'outcome', BOUNDS);
  ours.registerMetric(tallied as unknown as Metric);
  for (const [outcome, seconds] of observations) {
    histogram.observe({ outcome }, seconds);
    tallied.observe(outcome, seconds);
  }
  return { library, ours, tallied };
}

describe('TalliedHistogram', () => {
  it('renders the same text exposition as prom-client\'s Histogram given the same observations', async () => {
    const { library, ours } = both();
    const expected = await library.metrics();
    assert.match(expected, /_bucket\{le="\+Inf",outcome="unavailable"\} 2/);
    assert.equal(await ours.metrics(), expected);
  });

  it('gives the same JSON, and the same sum over workers, as prom-client\'s Histogram', async () => {
    const first = both();
    const second = both(OBSERVATIONS.slice(3));
    // prom-client adds an empty exemplar to each of its samples; a histogram without exemplars has none.
    const withoutExemplars = (json: unknown) => JSON.parse(JSON.stringify(json, (key, value: unknown) => (key === 'exemplar' ? undefined : value))) as unknown;
    assert.deepEqual(withoutExemplars(await first.ours.getMetricsAsJSON()), withoutExemplars(await first.library.getMetricsAsJSON()));
    const workers = async (pick: 'library' | 'ours') =>
      AggregatorRegistry.aggregate([await first[pick].getMetricsAsJSON(), await second[pick].getMetricsAsJSON()]).metrics();
    assert.equal(await workers('ours'), await workers('library'));
  });

  it('renders nothing but its help and type before the first observation, and again after reset', async () => {
    const { library, ours, tallied } = both([]);
    assert.equal(await ours.metrics(), await library.metrics());
    tallied.observe('allowed', 0.001);
    tallied.reset();
    assert.equal(await ours.metrics(), await library.metrics());
  });
});
