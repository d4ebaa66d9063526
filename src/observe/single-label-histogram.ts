import type { Aggregator, Metric, Registry } from 'prom-client';

/** One label value's series: observations per bucket (not cumulative), their sum and count. */
interface Series {
  readonly perBucket: Float64Array;
  sum: number;
  count: number;
}

/** A sample as prom-client's registries read it from a metric's get(), for /metrics and for cluster aggregation. */
interface Sample {
  readonly metricName: string;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
}

export interface SingleLabelHistogramOptions<Label extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelName: Label;
  /** Ascending upper bounds, as prom-client's Histogram takes them. */
  readonly buckets: readonly number[];
  readonly registers: readonly Registry[];
}

/**
 * A histogram with one label, exposed exactly as prom-client's Histogram exposes it (the same samples in
 * the same order: test/observe/single-label-histogram.test.ts compares them), but observed with plain
 * arithmetic. prom-client's observe builds, validates and hashes a label set and converts the bucket
 * bound to a property name on every call; for the check duration, on every check, that was the largest
 * cost of the metrics (issue #14).
 */
export class SingleLabelHistogram<Label extends string> {
  readonly name: string;
  readonly help: string;
  /** The TYPE line's word (prom-client's typings declare a numeric enum; its registry writes this field as is). */
  readonly type = 'histogram';
  /** How prom-client's AggregatorRegistry adds up the workers' samples, as for its own Histogram. */
  readonly aggregator: Aggregator = 'sum';
  private readonly labelName: Label;
  private readonly upperBounds: readonly number[];
  private readonly series = new Map<string, Series>();

  constructor(options: SingleLabelHistogramOptions<Label>) {
    this.name = options.name;
    this.help = options.help;
    this.labelName = options.labelName;
    this.upperBounds = [...options.buckets];
    if (this.upperBounds.some((bound, i) => i > 0 && bound <= (this.upperBounds[i - 1] ?? -Infinity))) {
      throw new Error(`${options.name}: buckets must ascend`);
    }
    // The registry holds metrics of its own types; it reads only name, help, type, aggregator, get() and reset().
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric);
  }

  observe(labelValue: string, value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`${this.name}: value is not a finite number: ${value}`);
    let series = this.series.get(labelValue);
    if (series === undefined) {
      series = { perBucket: new Float64Array(this.upperBounds.length), sum: 0, count: 0 };
      this.series.set(labelValue, series);
    }
    const { upperBounds } = this;
    for (let bucket = 0; bucket < upperBounds.length; bucket++) {
      if (value <= (upperBounds[bucket] ?? Infinity)) {
        series.perBucket[bucket] = (series.perBucket[bucket] ?? 0) + 1;
        break;
      }
    }
    series.sum += value;
    series.count += 1;
  }

  get(): Promise<{ name: string; help: string; type: string; aggregator: Aggregator; values: Sample[] }> {
    const values: Sample[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const [labelValue, series] of this.series) {
      let cumulative = 0;
      this.upperBounds.forEach((bound, bucket) => {
        cumulative += series.perBucket[bucket] ?? 0;
        values.push({ metricName: bucketName, labels: { le: bound, [this.labelName]: labelValue }, value: cumulative });
      });
      values.push({ metricName: bucketName, labels: { le: '+Inf', [this.labelName]: labelValue }, value: series.count });
      values.push({ metricName: `${this.name}_sum`, labels: { [this.labelName]: labelValue }, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels: { [this.labelName]: labelValue }, value: series.count });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values });
  }

  reset(): void {
    this.series.clear();
  }
}
