import type pg from 'pg';

/**
 * The pool hears errors of idle connections only: one the server ends between our statements would be an
 * unhandled 'error' event. Destroyed when the server ended it, or when `work` failed and `destroyOnFailure`.
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
