import { Counter, Gauge, Registry } from 'prom-client';

/** What became of a connection the primary handed to a worker (ConnectionHandoff). */
export type HandoffOutcome = 'taken' | 'handed_again' | 'closed_no_worker' | 'closed_too_many_waiting' | 'closed_not_taken';

/**
 * The primary's own metrics with WORKERS above 1, beside the workers' aggregated ones: how many
 * workers run, how many were replaced after dying, and what became of the connections it hands them.
 */
export class WorkerPoolMetrics {
  readonly registry = new Registry();
  private readonly replaced: Counter;
  private readonly handoffs: Counter<'outcome'>;

  constructor(options: { readonly running: () => number }) {
    const registers = [this.registry];
    this.replaced = new Counter({
      name: 'sitekey_authz_workers_replaced_total',
      help: 'Worker processes that exited unexpectedly and were replaced (WORKERS above 1).',
      registers,
    });
    this.handoffs = new Counter({
      name: 'sitekey_authz_worker_handoffs_total',
      help: 'What became of the gRPC connections the primary hands to workers (WORKERS above 1), by outcome: taken, handed_again (its worker exited before taking it), closed_no_worker, closed_too_many_waiting, closed_not_taken (its worker did not take it in time).',
      labelNames: ['outcome'],
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

  onHandoff(outcome: HandoffOutcome, connections = 1): void {
    this.handoffs.inc({ outcome }, connections);
  }
}
