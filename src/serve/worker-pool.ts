import cluster, { type Worker } from 'node:cluster';
import { Socket, type Server as TcpServer } from 'node:net';
import { AggregatorRegistry } from 'prom-client';
import type { Config } from '../config.js';
import { boundAddress, GRPC_LIMITS, listenForGrpc, processConnectionCap } from '../envoy/grpc-server.js';
import type { MetricsExposition, Readiness } from '../observe/http-endpoints.js';
import { startOperatorPorts } from './operator-ports.js';
import type { Logger } from '../observe/logger.js';
import { WorkerPoolMetrics } from '../observe/worker-pool-metrics.js';
import { ConnectionHandoff, type HandoffMessage, type ReceiptMessage } from './connection-handoff.js';
import { startCheckService, StoppedBeforeLoaded, type CheckService } from './check-service.js';
import { drainChecks, openServeDatabase, startAdminPort, stopRequested } from './lifecycle.js';
import { Resources } from './resources.js';

type PrimaryMessage =
  | { readonly type: 'sitekey-authz:start'; readonly databaseUrl: string }
  | { readonly type: 'sitekey-authz:stop'; readonly signal: string };
type WorkerMessage =
  | { readonly type: 'sitekey-authz:hello' }
  | { readonly type: 'sitekey-authz:taking-connections' }
  | ReceiptMessage
  | { readonly type: 'sitekey-authz:readiness'; readonly readiness: Readiness };

/** A worker dying sooner after its start is replaced after this pause. */
const QUICK_DEATH_MS = 1_000;
/** Beyond the drain a worker is allowed (delay + grace), how long the primary waits before SIGKILL. */
const STOP_MARGIN_MS = 10_000;

type Message = PrimaryMessage | WorkerMessage | HandoffMessage;

type OfType<M, T> = Extract<M, { readonly type: T }>;

function isMessage<T extends Message['type']>(message: unknown, type: T): message is OfType<Message, T> {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type;
}

interface WorkerState {
  readonly worker: Worker;
  readonly startedAt: number;
  takingConnections: boolean;
  readiness: Readiness | undefined;
}

/** WORKERS workers, each with its own snapshot, replaced when one dies, handed connections once it can decide. */
class WorkerPool {
  private readonly workers = new Map<number, WorkerState>();
  private stopping = false;
  private readonly aggregator = new AggregatorRegistry();
  private readonly ownMetrics = new WorkerPoolMetrics({ running: () => this.workers.size });
  private readonly handoff: ConnectionHandoff;
  private listener: TcpServer | undefined;
  private failStart!: (error: Error) => void;
  /** Replacements included. */
  private workersEverTakingConnections = 0;
  private resolveStarted!: () => void;
  /** Rejects if a first-generation worker exits before it takes connections. */
  private readonly started: Promise<void>;

  constructor(
    private readonly config: Config,
    private readonly databaseUrl: string,
    private readonly logger: Logger,
  ) {
    const limits = {
      // The primary holds a descriptor for each connection not yet taken: as many as fit beside its own.
      maxNotTaken: processConnectionCap(config.grpcMaxConnections, GRPC_LIMITS.reservedFileDescriptors).maxConnections,
      receiptTimeoutMs: GRPC_LIMITS.handoffReceiptTimeoutMs,
    };
    this.handoff = new ConnectionHandoff(limits, logger, (outcome, connections) => this.ownMetrics.onHandoff(outcome, connections));
    this.started = new Promise((resolveStarted, rejectStarted) => {
      this.resolveStarted = resolveStarted;
      this.failStart = rejectStarted;
    });
    cluster.on('message', (worker, message: unknown) => this.onMessage(worker, message));
    cluster.on('exit', (worker, code, signal) => this.onExit(worker, code, signal));
  }

  async listen(): Promise<void> {
    const where = { bindAddress: this.config.bindAddress, port: this.config.grpcPort, logger: this.logger };
    this.listener = await listenForGrpc((socket) => this.handoff.hand(socket), where, true);
    this.logger.info({ address: boundAddress(this.listener) }, 'gRPC port listening; each connection goes to a worker that can decide');
  }

  start(): Promise<void> {
    for (let i = 0; i < this.config.workers; i++) this.fork();
    return this.started;
  }

  private fork(): void {
    const worker = cluster.fork();
    // A message to a worker that is exiting fails (EPIPE) as an 'error' event, which unheard would end
    // the primary; its exit, which follows, is what the pool acts on.
    worker.on('error', (error) => this.logger.debug({ err: error, worker: worker.id }, 'a message to an exiting worker was not delivered'));
    this.workers.set(worker.id, { worker, startedAt: Date.now(), takingConnections: false, readiness: undefined });
  }

  private onMessage(worker: Worker, message: unknown): void {
    const state = this.workers.get(worker.id);
    if (state === undefined) return;
    if (isMessage(message, 'sitekey-authz:hello')) {
      // A message sent before the worker listens for it would be lost: it asks once it does. The
      // database URL may hold a password, so it goes over the IPC channel, not into the environment.
      worker.send({ type: 'sitekey-authz:start', databaseUrl: this.databaseUrl } satisfies PrimaryMessage);
    } else if (isMessage(message, 'sitekey-authz:taking-connections')) {
      state.takingConnections = true;
      this.handoff.add(worker);
      if (++this.workersEverTakingConnections === this.config.workers) this.resolveStarted();
    } else if (isMessage(message, 'sitekey-authz:connection-received')) {
      this.handoff.received(worker, message.id);
    } else if (isMessage(message, 'sitekey-authz:readiness')) {
      state.readiness = message.readiness;
    }
  }

  private onExit(worker: Worker, code: number | null, signal: string | null): void {
    const state = this.workers.get(worker.id);
    this.workers.delete(worker.id);
    this.handoff.exited(worker);
    if (state === undefined || this.stopping) return;
    const pid = worker.process.pid;
    if (!state.takingConnections && this.workersEverTakingConnections < this.config.workers) {
      // It could not start (a TLS file it cannot read...): nor would its replacement.
      this.failStart(new Error(`a worker process (pid ${pid}) exited with ${signal ?? `code ${code}`} before it could decide; its log lines above say why`));
      return;
    }
    this.ownMetrics.onWorkerReplaced();
    const livedMs = Date.now() - state.startedAt;
    this.logger.error({ worker: worker.id, pid, code, signal, livedMs }, 'a worker process exited unexpectedly; starting a replacement');
    const pause = livedMs < QUICK_DEATH_MS ? QUICK_DEATH_MS : 0;
    setTimeout(() => {
      if (!this.stopping) this.fork();
    }, pause).unref();
  }

  readiness(shuttingDown: boolean): Readiness {
    const workers = [...this.workers.values()].map((state) => ({
      worker: state.worker.id,
      pid: state.worker.process.pid,
      ready: state.readiness?.ready ?? false,
      connectionsNotTaken: this.handoff.untakenBy(state.worker),
      ...state.readiness?.detail,
    }));
    const ready = !shuttingDown && workers.length === this.config.workers && workers.every((worker) => worker.ready);
    return { ready, detail: { shuttingDown, workers } };
  }

  metrics(): MetricsExposition {
    return {
      contentType: this.ownMetrics.registry.contentType,
      scrape: async () => `${await this.aggregator.clusterMetrics()}\n${await this.ownMetrics.registry.metrics()}`,
    };
  }

  /** One that outlasts its drain is killed. */
  async stop(signal: string): Promise<void> {
    this.stopping = true;
    // As one process does: new connections are still answered while Envoy and Kubernetes notice
    // NOT_SERVING (SHUTDOWN_DELAY_SECONDS), refused once the workers stop taking them.
    const stopAccepting = setTimeout(() => this.stopListening(), this.config.shutdownDelaySeconds * 1000);
    const exits = [...this.workers.values()].map(
      ({ worker }) => new Promise<void>((resolveExit) => (worker.isDead() ? resolveExit() : worker.once('exit', () => resolveExit()))),
    );
    for (const { worker } of this.workers.values()) {
      if (worker.isConnected()) worker.send({ type: 'sitekey-authz:stop', signal } satisfies PrimaryMessage);
    }
    const limitMs = (this.config.shutdownDelaySeconds + this.config.shutdownGraceSeconds) * 1000 + STOP_MARGIN_MS;
    const timer = setTimeout(() => {
      for (const { worker } of this.workers.values()) {
        this.logger.warn({ worker: worker.id, pid: worker.process.pid }, 'a worker did not stop in time; killing it');
        worker.process.kill('SIGKILL');
      }
    }, limitMs);
    await Promise.all(exits);
    clearTimeout(timer);
    clearTimeout(stopAccepting);
    this.stopListening();
    this.handoff.close();
  }

  private stopListening(): void {
    if (this.listener?.listening) this.listener.close();
  }
}

/** The primary with WORKERS above 1: the database (migrated here once), the operator and admin ports, the workers. */
export async function runWorkerPool(config: Config, logger: Logger): Promise<void> {
  const stopping = stopRequested(logger);
  let shuttingDown = false;
  const resources = new Resources(logger);
  try {
    const database = resources.add(await openServeDatabase(config, logger), (opened) => opened.close());
    const workers = resources.add(new WorkerPool(config, database.url, logger), (pool) => pool.stop('shutdown'));
    await workers.listen();
    const http = resources.add(await startOperatorPorts(config, () => workers.readiness(shuttingDown), workers.metrics()), (endpoints) => endpoints.close());
    logger.info({ port: http.port, probePort: http.probePort, workers: config.workers }, 'operator endpoints listening (/healthz, /readyz, /metrics); starting workers');
    await startAdminPort(config, database.url, logger, resources);
    const signal = await Promise.race([stopping, workers.start().then(() => stopping)]);
    shuttingDown = true;
    await workers.stop(signal);
  } finally {
    shuttingDown = true;
    await resources.close();
  }
  logger.info('stopped');
}

/** Each connection receipted at once, so that the primary lets go of its copy. */
function takeHandedConnections(checks: CheckService, send: (message: WorkerMessage) => void): void {
  process.on('message', (message: unknown, socket: unknown) => {
    if (!isMessage(message, 'sitekey-authz:connection')) return;
    send({ type: 'sitekey-authz:connection-received', id: message.id });
    if (socket instanceof Socket) checks.acceptConnection(socket);
  });
}

/** The primary's first message of `type`. (A worker whose primary is gone is ended at once by the cluster module.) */
function fromPrimary<T extends PrimaryMessage['type']>(type: T): Promise<OfType<PrimaryMessage, T>> {
  return new Promise((resolveMessage) => {
    const onMessage = (message: unknown) => {
      if (!isMessage(message, type)) return;
      process.off('message', onMessage);
      resolveMessage(message as OfType<PrimaryMessage, T>);
    };
    process.on('message', onMessage);
  });
}

export async function runCheckWorker(config: Config, parentLogger: Logger): Promise<void> {
  const logger = parentLogger.child({ worker: cluster.worker?.id });
  const send = (message: WorkerMessage): void => {
    if (process.connected) process.send?.(message);
  };
  const stopping = stopRequested(logger, fromPrimary('sitekey-authz:stop').then((message) => message.signal));
  try {
    const started = fromPrimary('sitekey-authz:start').then((message) => message.databaseUrl);
    send({ type: 'sitekey-authz:hello' });
    const databaseUrl = await Promise.race([started, stopping.then(() => undefined)]);
    if (databaseUrl === undefined) return;
    let checks: CheckService;
    try {
      // A replacement handed connections at once could only answer them UNAVAILABLE.
      checks = await startCheckService(config, databaseUrl, logger, { handedConnectionsOnceLoadedUnless: stopping });
    } catch (error) {
      if (!(error instanceof StoppedBeforeLoaded)) throw error;
      logger.info('worker stopped before its credential snapshot was loaded');
      return;
    }
    try {
      // prom-client answers the primary's scrape requests with this worker's registry.
      AggregatorRegistry.setRegistries(checks.metrics.registry);
      new AggregatorRegistry();
      takeHandedConnections(checks, send);
      send({ type: 'sitekey-authz:taking-connections' });
      checks.followSnapshot((readiness) => send({ type: 'sitekey-authz:readiness', readiness }));
      await drainChecks(checks, config, await stopping, logger);
    } finally {
      await checks.close();
    }
    logger.info('worker stopped');
  } finally {
    // The IPC channel would keep the worker alive. The cluster's disconnect ends it once the work is done (last
    // lines written, exit code kept); a bare process.disconnect() makes the cluster module exit 0 at once.
    if (process.connected) cluster.worker?.disconnect();
  }
}

