import { Registry, type Counter } from 'prom-client';
import { counter, scrapedGauge } from './metric-kinds.js';

export type HandoffOutcome = 'taken' | 'handed_again' | 'closed_no_worker' | 'closed_too_many_waiting' | 'closed_not_taken';

/** The primary's own metrics with WORKERS above 1, beside the workers' aggregated ones. */
export class WorkerPoolMetrics {
  readonly registry = new Registry();
  private readonly replaced: Counter;
  private readonly handoffs: Counter<'outcome'>;

  constructor(options: { readonly running: () => number }) {
    this.replaced = counter(this.registry, 'sitekey_authz_workers_replaced_total', [],
      'Worker processes that exited unexpectedly and were replaced (WORKERS above 1).');
    this.handoffs = counter(this.registry, 'sitekey_authz_worker_handoffs_total', ['outcome'],
      'What became of the gRPC connections the primary hands to workers (WORKERS above 1), by outcome: taken, handed_again (its worker exited before taking it), closed_no_worker, closed_too_many_waiting, closed_not_taken (its worker did not take it in time).');
    scrapedGauge(this.registry, 'sitekey_authz_workers', options.running,
      'Worker processes running (WORKERS above 1).');
  }

  onWorkerReplaced(): void {
    this.replaced.inc();
  }

  onHandoff(outcome: HandoffOutcome, connections = 1): void {
    this.handoffs.inc({ outcome }, connections);
  }
}
