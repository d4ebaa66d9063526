import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { AdminTransactions } from '../../../src/store/admin-transactions.js';
import { withPooledClient } from '../../../src/store/pooled-client.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

/**
 * A connection the server ends while it is checked out and idle between two statements (the embedded
 * server stopping, pg_terminate_backend) made pg emit 'error' on a client nobody listened to: the CLI
 * crashed with "terminating connection due to administrator command" instead of reporting it.
 */
describe('a pooled connection the server ends between two statements', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let terminator: pg.Pool;
  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    terminator = new pg.Pool({ connectionString: database.url, max: 1 });
  });
  after(async () => {
    await pool.end();
    await terminator.end();
    await database.drop();
  });

  /**
   * Ends the client's session from another connection and waits until the client has seen it end.
   * Not events.once: it would reject on the client's 'error', which is the event under test.
   */
  async function endSessionOf(client: pg.PoolClient): Promise<void> {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const ended = new Promise<void>((resolveEnded) => client.once('end', () => resolveEnded()));
    await terminator.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    await ended;
  }

  it('fails the next statement, not the process, and the pool goes on with a new connection', async () => {
    await assert.rejects(
      withPooledClient(
        pool,
        async (client) => {
          await endSessionOf(client);
          await client.query('SELECT 1');
        },
        false,
      ),
      /terminat|Connection terminated|not queryable/i,
    );
    const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
    assert.equal(rows[0]!.one, 1);
  });

  it('an administrative read reports it as an error of its own', async () => {
    const transactions = new AdminTransactions(pool, { kind: 'cli', subject: 'test' });
    await assert.rejects(
      transactions.read(async (sql) => {
        await endSessionOf(sql as pg.PoolClient);
        return sql.query('SELECT 1');
      }),
    );
    assert.equal((await transactions.read((sql) => sql.query<{ one: number }>('SELECT 1 AS one'))).rows[0]!.one, 1);
  });
});
