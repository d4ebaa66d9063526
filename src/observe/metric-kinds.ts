import { Counter, Gauge, type Aggregator, type Registry } from 'prom-client';

/** A gauge whose value is read at each scrape. */
export function scrapedGauge(
  registry: Registry,
  name: string,
  read: () => number,
  help: string,
  aggregator: Aggregator = 'sum',
): void {
  new Gauge({
    name,
    help,
    aggregator,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}

/** A counter whose series `zeroes` are exported at 0 before anything is counted, so that rates and alerts see them. */
export function counter<L extends string = never>(
  registry: Registry,
  name: string,
  labelNames: readonly L[],
  help: string,
  zeroes: readonly Partial<Record<L, string>>[] = [],
): Counter<L> {
  const made = new Counter({ name, help, labelNames, registers: [registry] });
  for (const labels of zeroes) made.inc(labels, 0);
  return made;
}

export const each = <L extends string>(label: L, values: readonly string[]): Partial<Record<L, string>>[] =>
  values.map((value) => ({ [label]: value }) as Partial<Record<L, string>>);
