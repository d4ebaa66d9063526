import { Counter, Gauge, Registry } from 'prom-client';

/**
 * The primary's own metrics with WORKERS above 1, beside the workers' aggregated ones: how many
 * workers run, and how many were replaced after dying.
 */
export class WorkerPoolMetrics {
  readonly registry = new Registry();
  private readonly replaced: Counter;

  constructor(options: { readonly running: () => number }) {
    const registers = [this.registry];
    this.replaced = new Counter({
      name: 'sitekey_authz_workers_replaced_total',
      help: 'Worker processes that exited unexpectedly and were replaced (WORKERS above 1).',
      registers,
    });
    new Gauge({
      name: 'sitekey_authz_workers',
      help: 'Worker processes running (WORKERS above 1).',
      registers,
      collect() {
        this.set(options.running());
      },
    });
  }

  onWorkerReplaced(): void {
    this.replaced.inc();
  }
}
