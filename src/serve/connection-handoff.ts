import type { Worker } from 'node:cluster';
import type { Socket } from 'node:net';
import { RateLimit } from '../common/rate-limit.js';
import type { Logger } from '../observe/logger.js';
import type { HandoffOutcome } from '../observe/worker-pool-metrics.js';

export type HandoffMessage = { readonly type: 'sitekey-authz:connection'; readonly id: number };
export type ReceiptMessage = { readonly type: 'sitekey-authz:connection-received'; readonly id: number };

interface Handoff {
  readonly socket: Socket;
  readonly worker: Worker;
  readonly handedAt: number;
}

export interface HandoffLimits {
  /** Handed and not yet taken, over all workers: beyond it a newcomer is closed at once. */
  readonly maxNotTaken: number;
  readonly receiptTimeoutMs: number;
}

const CLOSED_WARNING_INTERVAL_MS = 60_000;

/**
 * Each connection goes, unread, to the next worker that can decide; the primary keeps its copy until a receipt, for
 * another worker if this one dies (the cluster's round robin would leave it unanswered for Envoy's 40 s).
 */
export class ConnectionHandoff {
  private readonly rotation: Worker[] = [];
  private turn = 0;
  /** Handed, no receipt yet, by handoff id, the oldest first. */
  private readonly notTaken = new Map<number, Handoff>();
  private readonly notTakenBy = new Map<Worker, number>();
  private lastId = 0;
  private readonly sweep: NodeJS.Timeout;
  private readonly closedWarning: RateLimit;
  private closedSinceWarning = 0;

  constructor(
    private readonly limits: HandoffLimits,
    private readonly logger: Logger,
    private readonly count: (outcome: HandoffOutcome, connections?: number) => void,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.closedWarning = new RateLimit(CLOSED_WARNING_INTERVAL_MS, now);
    this.sweep = setInterval(() => this.letGoOfOverdue(), Math.max(100, limits.receiptTimeoutMs / 4));
    this.sweep.unref();
  }

  untakenBy(worker: Worker): number {
    return this.notTakenBy.get(worker) ?? 0;
  }

  add(worker: Worker): void {
    if (!this.rotation.includes(worker)) this.rotation.push(worker);
  }

  received(worker: Worker, id: number): void {
    const handoff = this.notTaken.get(id);
    if (handoff?.worker !== worker) return;
    this.forget(id, handoff);
    handoff.socket.destroy();
    this.count('taken');
  }

  /** Only once it has exited: a worker that is alive may still take what it was handed. */
  exited(worker: Worker): void {
    const index = this.rotation.indexOf(worker);
    if (index >= 0) this.rotation.splice(index, 1);
    const untaken = [...this.notTaken].filter(([, handoff]) => handoff.worker === worker);
    for (const [id, handoff] of untaken) this.forget(id, handoff);
    if (untaken.length === 0) return;
    const handedAgain = untaken.filter(([, handoff]) => this.hand(handoff.socket)).length;
    if (handedAgain > 0) this.count('handed_again', handedAgain);
    this.logger.warn({ worker: worker.id, connections: untaken.length, handedAgain }, 'a worker exited before taking the connections handed to it; handed them to another (closed if none could decide)');
  }

  /** Safe: a worker that has the connection holds its own copy; one that never received it will not. */
  letGoOfOverdue(): void {
    const overdueBy = this.now() - this.limits.receiptTimeoutMs;
    for (const [id, handoff] of this.notTaken) {
      if (handoff.handedAt > overdueBy) break;
      this.forget(id, handoff);
      handoff.socket.destroy();
      this.closed('closed_not_taken', handoff.worker);
    }
  }

  close(): void {
    clearInterval(this.sweep);
    for (const { socket } of this.notTaken.values()) socket.destroy();
    this.notTaken.clear();
    this.notTakenBy.clear();
  }

  /** To the next worker that can decide, or closed at once (false) if none can or too many are waiting. */
  hand(socket: Socket): boolean {
    const worker = this.nextWorker();
    if (worker === undefined || this.notTaken.size >= this.limits.maxNotTaken) {
      socket.destroy();
      this.closed(worker === undefined ? 'closed_no_worker' : 'closed_too_many_waiting');
      return false;
    }
    const id = ++this.lastId;
    this.notTaken.set(id, { socket, worker, handedAt: this.now() });
    this.notTakenBy.set(worker, this.untakenBy(worker) + 1);
    // keepOpen: Node would close its copy only on its own receipt, and never if the worker died first.
    worker.send({ type: 'sitekey-authz:connection', id } satisfies HandoffMessage, socket, { keepOpen: true }, (error: Error | null) => {
      if (error) this.logger.debug({ err: error, worker: worker.id }, 'a connection could not be handed to an exiting worker');
    });
    return true;
  }

  private forget(id: number, handoff: Handoff): void {
    this.notTaken.delete(id);
    const left = this.untakenBy(handoff.worker) - 1;
    if (left > 0) this.notTakenBy.set(handoff.worker, left);
    else this.notTakenBy.delete(handoff.worker);
  }

  private closed(outcome: Exclude<HandoffOutcome, 'taken' | 'handed_again'>, worker?: Worker): void {
    this.count(outcome);
    this.closedSinceWarning += 1;
    if (!this.closedWarning.open()) return;
    this.logger.warn(
      { connections: this.closedSinceWarning, last: outcome, ...(worker && { worker: worker.id }), waiting: this.notTaken.size, maxNotTaken: this.limits.maxNotTaken },
      'gRPC connections closed by the primary: no worker could decide, too many waited for one, or a worker did not take its own in time (sitekey_authz_worker_handoffs_total)',
    );
    this.closedSinceWarning = 0;
  }

  /** The next in turn that has taken all it was handed; else the next in turn. */
  private nextWorker(): Worker | undefined {
    const count = this.rotation.length;
    if (count === 0) return undefined;
    for (let step = 0; step < count; step++) {
      const worker = this.rotation[(this.turn + step) % count]!;
      if (this.untakenBy(worker) === 0) {
        this.turn = (this.turn + step + 1) % count;
        return worker;
      }
    }
    const worker = this.rotation[this.turn % count]!;
    this.turn = (this.turn + 1) % count;
    return worker;
  }
}
