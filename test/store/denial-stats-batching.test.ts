import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '../../src/observe/logger.js';
import { DenialStatsRecorder, OVERFLOW_ADDRESS } from '../../src/store/denial-stats-recorder.js';

/** What one flush sent: a row per group, read from the statement's parallel arrays. */
interface FlushedGroup {
  readonly siteId: string;
  readonly errorId: number;
  readonly clientIp: string;
  readonly count: number;
  readonly addresses: number;
}

/**
 * The recorder's batching in memory, between two flushes: what it hands the statement. The statement
 * itself, against PostgreSQL, is test/integration/store/denial-stats-recorder.test.ts.
 */
function recorder(maxGroups = 100) {
  const flushes: FlushedGroup[][] = [];
  let failNext = false;
  const pool = {
    query: async (_text: string, values: unknown[]) => {
      if (failNext) {
        failNext = false;
        throw new Error('connection terminated');
      }
      const [siteIds, errorIds, clientIps, , counts, addresses] = values as [string[], number[], string[], boolean[], number[], number[]];
      flushes.push(siteIds.map((siteId, i) => ({ siteId, errorId: errorIds[i]!, clientIp: clientIps[i]!, count: counts[i]!, addresses: addresses[i]! })));
    },
  };
  const quiet = createLogger('silent', new Writable({ write: (_chunk, _encoding, done) => done() }));
  const recorded = new DenialStatsRecorder({ pool, flushSeconds: 3600, retentionDays: 30, maxGroups, logger: quiet });
  return { recorded, flushes, failNextFlush: () => (failNext = true) };
}

const byAddress = (groups: readonly FlushedGroup[] | undefined) =>
  Object.fromEntries((groups ?? []).map((group) => [`${group.siteId} ${group.errorId} ${group.clientIp}`, [group.count, group.addresses]]));

describe('denial stats batching', () => {
  it('counts a repeated refusal and interleaved ones each in its own group', async () => {
    const { recorded, flushes } = recorder();
    for (const [ip, errorId] of [['203.0.113.7', 102], ['203.0.113.7', 102], ['198.51.100.9', 103], ['203.0.113.7', 102], ['203.0.113.7', 103]] as const) {
      recorded.record('1001', errorId, ip, false, 1_000);
    }
    await recorded.flush();
    assert.deepEqual(byAddress(flushes[0]), { '1001 102 203.0.113.7': [3, 1], '1001 103 198.51.100.9': [1, 1], '1001 103 203.0.113.7': [1, 1] });
    await recorded.stop();
  });

  it('counts the refusal repeated after a flush in the next batch, not in the group already written', async () => {
    const { recorded, flushes } = recorder();
    recorded.record('1001', 102, '203.0.113.7', false, 1_000);
    await recorded.flush();
    recorded.record('1001', 102, '203.0.113.7', false, 2_000);
    recorded.record('1001', 102, '203.0.113.7', false, 3_000);
    await recorded.flush();
    assert.deepEqual(flushes.map(byAddress), [{ '1001 102 203.0.113.7': [1, 1] }, { '1001 102 203.0.113.7': [2, 1] }]);
    await recorded.stop();
  });

  it('keeps the addresses an overflow group stands for when a failed flush puts it back', async () => {
    const { recorded, flushes, failNextFlush } = recorder(2);
    for (const ip of ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4', '203.0.113.3']) recorded.record('1001', 102, ip, false, 1_000);
    failNextFlush();
    await recorded.flush();
    await recorded.flush();
    assert.deepEqual(byAddress(flushes[0]), { '1001 102 203.0.113.1': [1, 1], '1001 102 203.0.113.2': [1, 1], [`1001 102 ${OVERFLOW_ADDRESS}`]: [3, 2] });
    await recorded.stop();
  });
});
