import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../../src/observe/logger.js';
import { AuthUsageRecorder } from '../../src/store/auth-usage-recorder.js';

const HOUR_MS = 3_600_000;
const NOON = Date.parse('2026-11-24T12:00:00Z');

/**
 * The usage recorder's batching in memory: what each flush hands the statement, by hour, site and
 * method. The statement against PostgreSQL is exercised by the migration report's tests.
 */
function recorder() {
  const flushes: Array<Record<string, number>> = [];
  const pool = {
    query: async (_text: string, values: unknown[]) => {
      const [hours, siteIds, methods, counts] = values as [number[], string[], string[], number[]];
      flushes.push(Object.fromEntries(hours.map((hour, i) => [`${new Date(hour).toISOString().slice(11, 16)} ${siteIds[i]} ${methods[i]}`, counts[i]!])));
    },
  };
  const recorded = new AuthUsageRecorder({ pool, flushSeconds: 3600, retentionDays: 400, logger: createLogger('silent'), maxGroups: 100 });
  return { recorded, flushes };
}

describe('authentication usage batching', () => {
  it('counts repeated and interleaved requests by hour, site and method', async () => {
    const { recorded, flushes } = recorder();
    const requests: Array<[string, 'api_key' | 'token', number]> = [
      ['1001', 'api_key', NOON], ['1001', 'api_key', NOON + 1], ['1001', 'token', NOON + 2], ['1002', 'api_key', NOON + 3],
      ['1001', 'api_key', NOON + 4], ['1001', 'api_key', NOON + HOUR_MS], ['1001', 'api_key', NOON + HOUR_MS + 1],
    ];
    for (const [siteId, method, at] of requests) recorded.record(siteId, method, at);
    await recorded.flush();
    assert.deepEqual(flushes, [{ '12:00 1001 api_key': 3, '12:00 1001 token': 1, '12:00 1002 api_key': 1, '13:00 1001 api_key': 2 }]);
    await recorded.stop();
  });

  it('counts a request repeated after a flush in the next batch, not in the group already written', async () => {
    const { recorded, flushes } = recorder();
    recorded.record('1001', 'api_key', NOON);
    await recorded.flush();
    recorded.record('1001', 'api_key', NOON + 1);
    await recorded.flush();
    assert.deepEqual(flushes, [{ '12:00 1001 api_key': 1 }, { '12:00 1001 api_key': 1 }]);
    await recorded.stop();
  });
});
