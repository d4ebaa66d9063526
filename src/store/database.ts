import pg from 'pg';
import type { Config } from '../config.js';
import type { Logger } from '../observe/logger.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';

/** How long to wait for PostgreSQL to accept a connection: a server that never answers must not hang us. */
export const CONNECT_TIMEOUT_MS = 10_000;

/**
 * A pool on the database, with the connect time-out, named in pg_stat_activity. An idle connection
 * the server drops must not crash the process: it is logged, and the next query reports the failure.
 * With `timeoutMs`, every wait on the server is bounded by it: connecting, each statement and lock
 * (enforced by PostgreSQL) and each round trip (enforced here, for a server that does not answer at all).
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
  pool.on('error', (error) => options.logger.warn({ err: error }, 'idle PostgreSQL connection failed'));
  return pool;
}

/** The credential database for this process: DATABASE_URL, or the embedded server in DATA_DIR. */
export interface Database {
  readonly url: string;
  readonly embedded: boolean;
  /** An embedded cluster created just now: DATA_DIR held no database before. */
  readonly created: boolean;
  /** Stops the embedded server when this process started it; otherwise does nothing. */
  close(): Promise<void>;
}

/**
 * Opens the database that `serve` and the CLI share; `use` says which of the two asks. With
 * DATABASE_URL unset it starts an embedded PostgreSQL in DATA_DIR whose data survives restarts, or
 * joins the one another of our processes already runs there, so the CLI works beside a running `serve`.
 */
export async function openDatabase(config: Config, logger: Logger, use: 'service' | 'command' = 'service'): Promise<Database> {
  if (config.databaseUrl !== undefined) {
    return { url: config.databaseUrl, embedded: false, created: false, close: async () => {} };
  }
  const server = await startEmbeddedPostgres({
    dataDir: config.dataDir,
    persistent: true,
    // A command that starts the cluster stops it again in a moment: others must not join it meanwhile.
    exclusive: use === 'command',
    onLog: (line) => logger.debug({ source: 'embedded-postgres' }, line),
  });
  logger.info(
    { dataDir: config.dataDir, startedHere: server.ownedByUs },
    server.ownedByUs
      ? 'DATABASE_URL is unset: started an embedded PostgreSQL; its data is kept in DATA_DIR across restarts'
      : 'DATABASE_URL is unset: using the embedded PostgreSQL already running in DATA_DIR',
  );
  return { url: server.url, embedded: true, created: server.created, close: () => server.stop() };
}
