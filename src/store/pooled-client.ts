import type pg from 'pg';

/**
 * A connection of the pool for `work`, then back to the pool; destroyed instead when the server ended
 * it, or when `work` failed and `destroyOnFailure` says the connection may be unusable. The pool listens
 * for errors only on idle connections: one the server ends between two of our statements (stopping, or
 * pg_terminate_backend) would end the process as an unhandled 'error' event. Here the next statement
 * fails instead, and `work` reports it.
 */
export async function withPooledClient<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>, destroyOnFailure: boolean): Promise<T> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onLost = (error: Error): void => {
    lost ??= error;
  };
  client.on('error', onLost);
  let failure: Error | true | undefined;
  try {
    return await work(client);
  } catch (error) {
    if (destroyOnFailure) failure = error instanceof Error ? error : true;
    throw error;
  } finally {
    client.off('error', onLost);
    client.release(lost ?? failure);
  }
}
