import type { Worker } from 'node:cluster';
import type { Socket } from 'node:net';
import type { Logger } from '../observe/logger.js';
import type { WorkerPoolMetrics } from '../observe/worker-pool-metrics.js';

/** A connection handed to a worker, and the worker's word that it has it. */
export type HandoffMessage = { readonly type: 'sitekey-authz:connection'; readonly id: number };
export type ReceiptMessage = { readonly type: 'sitekey-authz:connection-received'; readonly id: number };

interface Handoff {
  readonly socket: Socket;
  readonly worker: Worker;
}

/**
 * The primary's gRPC port. It accepts each connection, reads nothing from it, and hands it to the next
 * worker that can decide; it keeps its own copy until that worker sends a receipt, and hands the
 * connection to another worker if this one dies first. (Node's cluster round robin keeps such a
 * connection open and unanswered until the client gives up: Envoy would go on sending checks into it
 * until its keepalive gives up on it, 40 s with deploy/envoy.)
 */
export class ConnectionHandoff {
  /** Workers that can decide, in the order they take turns. */
  private readonly rotation: Worker[] = [];
  private turn = 0;
  /** Handed, no receipt yet; by handoff id. */
  private readonly unreceived = new Map<number, Handoff>();
  private lastId = 0;

  /** `maxUnreceived`: beyond it a newcomer is closed at once (workers that take nothing, a flood). */
  constructor(
    private readonly logger: Logger,
    private readonly maxUnreceived: number,
    private readonly metrics: Pick<WorkerPoolMetrics, 'onConnectionsHandedAgain' | 'onConnectionClosedForNoWorker'>,
  ) {}

  /** Connections handed to `worker` that it has not taken yet: more than a few, and it is stuck. */
  untakenBy(worker: Worker): number {
    let count = 0;
    for (const handoff of this.unreceived.values()) if (handoff.worker === worker) count += 1;
    return count;
  }

  /** A worker that can decide: it takes its turn from now on. */
  add(worker: Worker): void {
    if (!this.rotation.includes(worker)) this.rotation.push(worker);
  }

  /** The worker has the connection: the primary lets go of its copy (the connection stays open). */
  received(worker: Worker, id: number): void {
    const handoff = this.unreceived.get(id);
    if (handoff?.worker !== worker) return;
    this.unreceived.delete(id);
    handoff.socket.destroy();
  }

  /**
   * A worker that has exited: it takes no more turns, and what it had not taken goes to another. Only
   * once it has exited: a worker that is alive may still take them.
   */
  exited(worker: Worker): void {
    const index = this.rotation.indexOf(worker);
    if (index >= 0) this.rotation.splice(index, 1);
    const untaken = [...this.unreceived].filter(([, handoff]) => handoff.worker === worker);
    for (const [id] of untaken) this.unreceived.delete(id);
    if (untaken.length === 0) return;
    const handedAgain = untaken.filter(([, handoff]) => this.hand(handoff.socket)).length;
    this.metrics.onConnectionsHandedAgain(handedAgain);
    this.logger.warn({ worker: worker.id, connections: untaken.length, handedAgain }, 'a worker exited before taking the connections handed to it; handed them to another (closed if none could decide)');
  }

  /** What no worker has taken yet is closed. */
  close(): void {
    for (const { socket } of this.unreceived.values()) socket.destroy();
    this.unreceived.clear();
  }

  /**
   * A connection accepted with pauseOnConnect (nothing read): to the next worker that can decide, or
   * closed at once if there is none (false).
   */
  hand(socket: Socket): boolean {
    const worker = this.nextWorker();
    if (worker === undefined || this.unreceived.size >= this.maxUnreceived) {
      socket.destroy();
      this.metrics.onConnectionClosedForNoWorker();
      return false;
    }
    const id = ++this.lastId;
    this.unreceived.set(id, { socket, worker });
    // keepOpen: Node would close its copy only on its own receipt, and never if the worker died first.
    worker.send({ type: 'sitekey-authz:connection', id } satisfies HandoffMessage, socket, { keepOpen: true }, (error: Error | null) => {
      // The worker is exiting: exited() hands the connection on.
      if (error) this.logger.debug({ err: error, worker: worker.id }, 'a connection could not be handed to an exiting worker');
    });
    return true;
  }

  /** The next in turn that has taken everything it was handed; else the next in turn. */
  private nextWorker(): Worker | undefined {
    const count = this.rotation.length;
    if (count === 0) return undefined;
    const busy = new Set([...this.unreceived.values()].map((handoff) => handoff.worker));
    for (let step = 0; step < count; step++) {
      const worker = this.rotation[(this.turn + step) % count]!;
      if (!busy.has(worker)) {
        this.turn = (this.turn + step + 1) % count;
        return worker;
      }
    }
    const worker = this.rotation[this.turn % count]!;
    this.turn = (this.turn + 1) % count;
    return worker;
  }
}
