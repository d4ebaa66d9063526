/** A sample as prom-client's registry reads it from a metric's get(). */
interface Sample {
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
  readonly metricName: string;
}

interface Series {
  /** Observations per bucket, not cumulative; one beyond the last bound counts only in +Inf. */
  readonly perBucket: Float64Array;
  sum: number;
  count: number;
}

/**
 * A histogram with one label, kept in plain arrays and rendered by prom-client's registry (text, JSON,
 * and the cluster aggregation over workers) exactly as prom-client's own Histogram renders. Its observe
 * is a bucket search and three additions: prom-client's builds, checks and hashes a label set on every
 * call, which on every check cost more than all the other metrics of a check together.
 */
export class TalliedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: string,
    private readonly upperBounds: readonly number[],
  ) {}

  observe(labelValue: string, value: number): void {
    let series = this.series.get(labelValue);
    if (series === undefined) {
      series = { perBucket: new Float64Array(this.upperBounds.length), sum: 0, count: 0 };
      this.series.set(labelValue, series);
    }
    for (let bucket = 0; bucket < this.upperBounds.length; bucket++) {
      if (value <= this.upperBounds[bucket]!) {
        series.perBucket[bucket]! += 1;
        break;
      }
    }
    series.sum += value;
    series.count += 1;
  }

  /** What prom-client's Histogram#get gives: per label value, cumulative buckets, +Inf, sum and count. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const values: Sample[] = [];
    for (const [labelValue, series] of this.series) {
      const own = { [this.labelName]: labelValue };
      let cumulative = 0;
      this.upperBounds.forEach((bound, index) => {
        cumulative += series.perBucket[index]!;
        values.push({ labels: { le: bound, ...own }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push(
        { labels: { le: '+Inf', ...own }, value: series.count, metricName: `${this.name}_bucket` },
        { labels: { ...own }, value: series.sum, metricName: `${this.name}_sum` },
        { labels: { ...own }, value: series.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series.clear();
  }
}
