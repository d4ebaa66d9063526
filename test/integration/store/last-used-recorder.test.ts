import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createLogger } from '../../../src/observe/logger.js';
import { LastUsedRecorder } from '../../../src/store/last-used-recorder.js';
import type { StatementRunner } from '../../../src/store/periodic-flush.js';
import { insertSite } from '../../support/credentials.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { eventually } from '../../support/eventually.js';
import { loggedLines } from '../../support/logged-lines.js';

/** The real pool, counting the statements the recorder sends and failing one on request. */
class CountingRunner implements StatementRunner {
  statements = 0;
  failNext = false;
  constructor(private readonly pool: pg.Pool) {}
  async query(text: string, values: unknown[]): Promise<unknown> {
    this.statements++;
    if (this.failNext) {
      this.failNext = false;
      throw new Error('connection refused');
    }
    return this.pool.query(text, values);
  }
}

describe('last-used recorder', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let runner: CountingRunner;
  let keyIds: string[];

  const lastUsed = async () => {
    const { rows } = await pool.query<{ id: string; last_used_at: Date | null }>('SELECT id::text, last_used_at FROM api_keys ORDER BY id');
    return new Map(rows.map((row) => [row.id, row.last_used_at?.getTime() ?? null]));
  };

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url });
    runner = new CountingRunner(pool);
    keyIds = await insertSite(pool, {
      id: '1',
      keys: Array.from({ length: 50 }, (_, i) => ({ key: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` })),
    });
  });

  after(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('writes many keys in one statement per flush, keeping the latest time of each', async () => {
    const recorder = new LastUsedRecorder({ pool: runner, flushSeconds: 3_600, logger: createLogger('silent') });
    const base = Date.parse('2026-11-22T10:00:00Z');
    for (let i = 0; i < 10_000; i++) recorder.record(keyIds[i % keyIds.length] ?? '', base + i);
    const before = runner.statements;
    await recorder.flush();
    assert.equal(runner.statements - before, 1);
    const times = await lastUsed();
    assert.equal(times.get(keyIds[0] ?? ''), base + 9_950);
    assert.equal(times.get(keyIds[49] ?? ''), base + 9_999);
    await recorder.stop();
  });

  it('never moves a last-used time backwards', async () => {
    const recorder = new LastUsedRecorder({ pool: runner, flushSeconds: 3_600, logger: createLogger('silent') });
    recorder.record(keyIds[0] ?? '', Date.parse('2020-01-01T00:00:00Z'));
    await recorder.stop();
    assert.equal((await lastUsed()).get(keyIds[0] ?? ''), Date.parse('2026-11-22T10:00:00Z') + 9_950);
  });

  it('keeps a failed batch for the next flush', async () => {
    const recorder = new LastUsedRecorder({ pool: runner, flushSeconds: 3_600, logger: createLogger('silent') });
    const at = Date.parse('2026-11-22T11:00:00Z');
    recorder.record(keyIds[1] ?? '', at);
    runner.failNext = true;
    await recorder.flush();
    assert.notEqual((await lastUsed()).get(keyIds[1] ?? ''), at);
    await recorder.flush();
    assert.equal((await lastUsed()).get(keyIds[1] ?? ''), at);
    await recorder.stop();
  });

  it('logs a failing database once, not at every flush, and says when writing works again', async () => {
    const { lines, logger } = loggedLines('info');
    const recorder = new LastUsedRecorder({ pool: runner, flushSeconds: 3_600, logger });
    const at = Date.parse('2026-11-22T11:30:00Z');
    recorder.record(keyIds[1] ?? '', at);
    for (let flush = 0; flush < 5; flush++) {
      runner.failNext = true;
      await recorder.flush();
    }
    await recorder.flush();
    await recorder.stop();
    await new Promise((resolveWrites) => setImmediate(resolveWrites));
    assert.deepEqual(lines.map((line) => line.msg), ['writing key last-used times failed; keeping them for the next flush', 'writing key last-used times works again']);
    assert.equal((await lastUsed()).get(keyIds[1] ?? ''), at);
  });

  it('flushes on stop, as SIGTERM does, and sends nothing when nothing was recorded', async () => {
    const recorder = new LastUsedRecorder({ pool: runner, flushSeconds: 3_600, logger: createLogger('silent') });
    const before = runner.statements;
    await recorder.flush();
    assert.equal(runner.statements, before);
    const at = Date.parse('2026-11-22T12:00:00Z');
    recorder.record(keyIds[2] ?? '', at);
    await recorder.stop();
    assert.equal((await lastUsed()).get(keyIds[2] ?? ''), at);
  });

  it('flushes on its own every flushSeconds', async () => {
    const recorder = new LastUsedRecorder({ pool: runner, flushSeconds: 1, logger: createLogger('silent') });
    const at = Date.parse('2026-11-22T13:00:00Z');
    recorder.record(keyIds[3] ?? '', at);
    // Waits for the write itself, not for a time a loaded machine may overrun; stop() then waits for
    // any flush under way, so nothing is left running after the test.
    await eventually('the timer to write the time', async () => (await lastUsed()).get(keyIds[3] ?? ''), (written) => written === at, 15_000);
    await recorder.stop();
  });

  it('tells its observer of each write and whether it failed, and survives an observer that throws', async () => {
    const outcomes: Array<{ ok: boolean; keys: number }> = [];
    const recorder = new LastUsedRecorder({
      pool: runner,
      flushSeconds: 3_600,
      logger: createLogger('silent'),
      onFlush: (outcome) => {
        outcomes.push(outcome);
        throw new Error('observer bug');
      },
    });
    await recorder.flush();
    assert.deepEqual(outcomes, [], 'a flush with nothing to write is not a write');
    recorder.record(keyIds[4] ?? '', Date.parse('2026-11-22T14:00:00Z'));
    recorder.record(keyIds[5] ?? '', Date.parse('2026-11-22T14:00:00Z'));
    runner.failNext = true;
    await recorder.flush();
    await recorder.flush();
    assert.deepEqual(outcomes, [
      { ok: false, keys: 2 },
      { ok: true, keys: 2 },
    ]);
    await recorder.stop();
  });
});
