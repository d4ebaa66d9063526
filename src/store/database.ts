import pg from 'pg';
import type { Config } from '../config.js';
import type { Logger } from '../observe/logger.js';
import { startEmbeddedPostgres } from '../embedded/embedded-postgres.js';

/** How long to wait for PostgreSQL to accept a connection: a server that never answers must not hang us. */
export const CONNECT_TIMEOUT_MS = 10_000;

/**
 * A pool whose idle connection the server drops is logged, not a crash. With `timeoutMs`, every wait on the
 * server is bounded: by PostgreSQL for statements and locks, here for a server that does not answer at all.
 */
export function connectionPool(
  url: string,
  options: { readonly applicationName: string; readonly max: number; readonly logger: Logger; readonly timeoutMs?: number },
): pg.Pool {
  const timeoutMs = options.timeoutMs;
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max,
    application_name: options.applicationName,
    connectionTimeoutMillis: timeoutMs ?? CONNECT_TIMEOUT_MS,
    ...(timeoutMs === undefined
      ? {}
      : {
          statement_timeout: timeoutMs,
          lock_timeout: timeoutMs,
          idle_in_transaction_session_timeout: timeoutMs,
          query_timeout: timeoutMs,
        }),
  });
  pool.on('error', (error) => {
    // pool.end() resolves before its idle connections have closed: one the server ends meanwhile
    // (the embedded server stopping right after) is part of shutting down, not a failure.
    if (pool.ending) options.logger.debug({ err: error }, 'idle PostgreSQL connection closed while shutting down');
    else options.logger.warn({ err: error }, 'idle PostgreSQL connection failed');
  });
  return pool;
}

export interface Database {
  readonly url: string;
  readonly embedded: boolean;
  /** An embedded cluster created just now: DATA_DIR held no database before. */
  readonly created: boolean;
  /** Stops the embedded server when this process started it; otherwise does nothing. */
  close(): Promise<void>;
}

/**
 * A command stops the embedded server it started even on Ctrl-C: the server runs in its own session and would
 * outlive it. A signal that comes while the server starts is acted on once it has started.
 */
function stopOnSignals() {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  let caught: NodeJS.Signals | undefined;
  let stopServer: (() => Promise<void>) | undefined;
  let starting = true;
  const unhook = () => signals.forEach((signal) => process.off(signal, onSignal));
  const die = async (signal: NodeJS.Signals) => {
    unhook();
    await stopServer?.().catch(() => {});
    process.kill(process.pid, signal); // with no handler left, the signal ends us as if never caught
  };
  const onSignal = (signal: NodeJS.Signals) => {
    caught ??= signal;
    if (!starting) void die(signal);
  };
  signals.forEach((signal) => process.on(signal, onSignal));
  return {
    /** The start is over; `stop` when this process started the server and so must stop it. */
    async started(stop?: () => Promise<void>): Promise<void> {
      starting = false;
      stopServer = stop;
      if (caught !== undefined) await die(caught);
      else if (stop === undefined) unhook();
    },
    unhook,
  };
}

/** With DATABASE_URL unset: the embedded PostgreSQL in DATA_DIR, started or joined (the CLI beside a running serve). */
export async function openDatabase(config: Config, logger: Logger, use: 'service' | 'command' = 'service'): Promise<Database> {
  if (config.databaseUrl !== undefined) {
    return { url: config.databaseUrl, embedded: false, created: false, close: async () => {} };
  }
  const signals = use === 'command' ? stopOnSignals() : undefined;
  const server = await startEmbeddedPostgres({
    dataDir: config.dataDir,
    persistent: true,
    // A command that starts the cluster stops it again in a moment: others must not join it meanwhile.
    exclusive: use === 'command',
  }).catch(async (error: unknown) => {
    await signals?.started();
    throw error;
  });
  await signals?.started(server.ownedByUs ? () => server.stop() : undefined);
  if (server.tookOverFrom !== undefined) {
    logger.warn({ dataDir: config.dataDir, deadOwner: server.tookOverFrom }, 'restarted the embedded PostgreSQL that an exited process had left running; it is ours to stop now');
  }
  logger.info(
    { dataDir: config.dataDir, startedHere: server.ownedByUs },
    server.ownedByUs
      ? 'DATABASE_URL is unset: started an embedded PostgreSQL (log: DATA_DIR/postgresql.log); its data is kept in DATA_DIR across restarts'
      : 'DATABASE_URL is unset: using the embedded PostgreSQL already running in DATA_DIR',
  );
  return {
    url: server.url,
    embedded: true,
    created: server.created,
    close: async () => {
      signals?.unhook();
      await server.stop();
    },
  };
}

/** SQLSTATE undefined_table: the database has no sitekey-authz tables yet (not migrated). */
export const UNDEFINED_TABLE = '42P01';
