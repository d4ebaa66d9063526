import { Counter, Gauge, Registry } from 'prom-client';

/**
 * The primary's own metrics with WORKERS above 1, beside the workers' aggregated ones: how many
 * workers run, how many were replaced after dying, and what became of the connections it hands them.
 */
export class WorkerPoolMetrics {
  readonly registry = new Registry();
  private readonly replaced: Counter;
  private readonly handedAgain: Counter;
  private readonly closedForNoWorker: Counter;

  constructor(options: { readonly running: () => number }) {
    const registers = [this.registry];
    this.replaced = new Counter({
      name: 'sitekey_authz_workers_replaced_total',
      help: 'Worker processes that exited unexpectedly and were replaced (WORKERS above 1).',
      registers,
    });
    this.handedAgain = new Counter({
      name: 'sitekey_authz_connections_handed_again_total',
      help: 'gRPC connections whose worker exited before taking them, handed to another worker (WORKERS above 1).',
      registers,
    });
    this.closedForNoWorker = new Counter({
      name: 'sitekey_authz_connections_closed_no_worker_total',
      help: 'gRPC connections closed at once by the primary: no worker could decide, or too many were not yet taken (WORKERS above 1).',
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

  onConnectionsHandedAgain(count: number): void {
    this.handedAgain.inc(count);
  }

  onConnectionClosedForNoWorker(): void {
    this.closedForNoWorker.inc();
  }
}
