import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startAdminIssuer, type AdminIssuer } from '../../support/admin-issuer.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { getOnNewConnection, newTokenFlood, slowLoris, type Attack } from '../../support/operator-attacks.js';
import { startService, type RunningService } from '../../support/service.js';

/** The stranger's address; staff come from 127.0.0.1 (loopback is a /8 on Linux). */
const STRANGER = '127.0.0.2';

/**
 * Strangers at the admin port, from one address, while the organisation's people use it from another:
 * the people are answered as if no stranger were there.
 */
describe('the admin port under a stranger\'s attack answers the staff', () => {
  let database: TestDatabase;
  let issuer: AdminIssuer;
  let service: RunningService;
  let me = '';

  before(async () => {
    database = await freshDatabase();
    issuer = await startAdminIssuer();
    service = await startService({ DATABASE_URL: database.url, ...issuer.env(), LOG_LEVEL: 'warn' });
    me = `${service.adminBase ?? ''}/api/v1/me`;
  });

  after(async () => {
    await service?.stop();
    await issuer?.close();
    await database?.drop();
  });

  /** Each staff member's request, one every `everyMs` on a new connection, while `attack` runs; the statuses. */
  async function staffDuring(launch: () => Attack, tokens: readonly string[], everyMs: number): Promise<{ statuses: Array<number | string>; attack: string }> {
    const attack = launch();
    try {
      await sleep(1_500);
      const statuses: Array<Promise<number | string>> = [];
      for (const token of tokens) {
        statuses.push(getOnNewConnection(me, { authorization: `Bearer ${token}` }));
        await sleep(everyMs);
      }
      return { statuses: await Promise.all(statuses), attack: attack.describe() };
    } finally {
      attack.stop();
    }
  }

  it('verifies staff\'s fresh tokens while another address sends 180 new made-up tokens a second', async () => {
    const tokens = await Promise.all(Array.from({ length: 12 }, (_, i) => issuer.tokenFor(['viewer', 'manager', 'admin'][i % 3] ?? 'viewer')));
    const { statuses, attack } = await staffDuring(() => newTokenFlood(me, issuer, 180, STRANGER), tokens, 150);
    assert.deepEqual(statuses, tokens.map(() => 200), attack);
  });

  it('answers 24 staff requests while another address holds 300 slow-loris connections', async () => {
    const token = await issuer.tokenFor('viewer');
    const { statuses, attack } = await staffDuring(() => slowLoris(service.adminBase ?? '', 300, STRANGER), Array.from({ length: 24 }, () => token), 100);
    assert.deepEqual(statuses, statuses.map(() => 200), attack);
  });
});
