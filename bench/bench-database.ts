import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedServer } from '../src/embedded/embedded-postgres.js';
import { migrate } from '../src/store/migrate.js';

/** Statements issued on the bench's database, by statement text (normalised by PostgreSQL). */
export type StatementCounts = ReadonlyMap<string, number>;

export interface BenchDatabase {
  /** The bench's own database, migrated and empty: what `serve` gets as DATABASE_URL. */
  readonly url: string;
  /** E.g. "embedded PostgreSQL 18.1, pg_stat_statements". */
  readonly description: string;
  /** How statements are counted: pg_stat_statements, or transactions where it is unavailable. */
  readonly statementSource: 'pg_stat_statements' | 'pg_stat_database transactions';
  /** Statements on the bench database so far (counted from another database, so counting adds none). */
  statements(): Promise<StatementCounts>;
  close(): Promise<void>;
}

const PRELOAD = 'pg_stat_statements';

/** The server with pg_stat_statements preloaded: set it, then restart (shared_preload_libraries is read at start only). */
async function embeddedWithStatementStats(dataDir: string): Promise<EmbeddedServer> {
  const first = await startEmbeddedPostgres({ dataDir, persistent: false });
  const client = new pg.Client({ connectionString: first.url });
  await client.connect();
  try {
    await client.query(`ALTER SYSTEM SET shared_preload_libraries = '${PRELOAD}'`);
  } finally {
    await client.end();
  }
  await first.stop();
  return startEmbeddedPostgres({ dataDir, persistent: false });
}

function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * A fresh, migrated database for one bench run: on DATABASE_URL's server when set (its user needs
 * CREATEDB; dropped at the end), else on an embedded PostgreSQL of its own in a temporary directory,
 * started with pg_stat_statements so that every statement `serve` issues can be counted.
 */
export async function openBenchDatabase(databaseUrl: string | undefined): Promise<BenchDatabase> {
  let server: EmbeddedServer | undefined;
  let dataDir: string | undefined;
  let serverUrl = databaseUrl;
  if (!serverUrl) {
    dataDir = await mkdtemp(join(tmpdir(), 'sitekey-authz-bench-pg-'));
    server = await embeddedWithStatementStats(dataDir);
    serverUrl = server.url;
  }
  const name = `sitekey_bench_${process.pid}`;
  // The observer stays on the server's own database: its queries are not the bench database's.
  const observer = new pg.Client({ connectionString: serverUrl });
  await observer.connect();
  await observer.query(`CREATE DATABASE ${name}`);
  const url = withDatabase(serverUrl, name);
  await migrate(url);
  const { rows: [identity] } = await observer.query<{ oid: number; version: string }>(
    `SELECT oid, current_setting('server_version') AS version FROM pg_database WHERE datname = $1`,
    [name],
  );
  const statementStats = await observer.query(`CREATE EXTENSION IF NOT EXISTS ${PRELOAD}`).then(
    () => observer.query('SELECT 1 FROM pg_stat_statements LIMIT 1').then(() => true),
    () => false,
  );
  const where = server ? 'embedded PostgreSQL' : 'PostgreSQL from DATABASE_URL';

  async function statements(): Promise<StatementCounts> {
    if (statementStats) {
      const { rows } = await observer.query<{ query: string; calls: string }>(
        'SELECT query, sum(calls)::text AS calls FROM pg_stat_statements WHERE dbid = $1 GROUP BY query',
        [identity!.oid],
      );
      return new Map(rows.map((row) => [row.query, Number(row.calls)]));
    }
    // Without pg_stat_statements: each of serve's statements is its own transaction (autocommit).
    // Backends report their counters within a second or so of being idle.
    await sleep(1_500);
    const { rows } = await observer.query<{ transactions: string }>(
      'SELECT (xact_commit + xact_rollback)::text AS transactions FROM pg_stat_database WHERE datid = $1',
      [identity!.oid],
    );
    return new Map([['(transactions)', Number(rows[0]?.transactions ?? 0)]]);
  }

  return {
    url,
    description: `${where} ${identity!.version}${statementStats ? ', pg_stat_statements' : ''}`,
    statementSource: statementStats ? 'pg_stat_statements' : 'pg_stat_database transactions',
    statements,
    async close() {
      await observer.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await observer.end();
      await server?.stop();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Statements issued between two readings, by text, largest first. */
export function statementsBetween(before: StatementCounts, after: StatementCounts): Array<{ query: string; calls: number }> {
  return [...after]
    .map(([query, calls]) => ({ query, calls: calls - (before.get(query) ?? 0) }))
    .filter((entry) => entry.calls > 0)
    .sort((a, b) => b.calls - a.calls);
}
