import assert from 'node:assert/strict';
import { Agent, get, type IncomingHttpHeaders } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startAdminIssuer, type AdminIssuer } from '../../support/admin-issuer.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';
import { slowLoris, type Attack } from '../../support/operator-attacks.js';
import { startService, type RunningService } from '../../support/service.js';

/** The stranger's address; staff come from 127.0.0.1 (loopback is a /8 on Linux). */
const STRANGER = '127.0.0.2';

/** GET on a connection of its own, as a person's browser opens one; the status, or the error's code. */
function getOnNewConnection(url: string, headers: IncomingHttpHeaders, timeoutMs = 10_000): Promise<number | string> {
  return new Promise((resolveStatus) => {
    const request = get(url, { agent: false, headers, timeout: timeoutMs }, (response) => {
      response.resume();
      response.on('end', () => resolveStatus(response.statusCode ?? 0));
      response.on('error', (error: NodeJS.ErrnoException) => resolveStatus(error.code ?? error.message));
    });
    request.on('timeout', () => request.destroy(Object.assign(new Error('time-out'), { code: 'time-out' })));
    request.on('error', (error: NodeJS.ErrnoException) => resolveStatus(error.code ?? error.message));
  });
}

const base64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * `perSecond` requests a second from STRANGER, each with a token never sent before, alternating made-up
 * words (`x1`, `x2`, …) and tokens shaped like the provider's (its kid, iss, aud, a future exp) under a
 * signature that is not one.
 */
function newTokenFlood(url: string, issuer: AdminIssuer, perSecond: number): Attack {
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const startedMs = performance.now();
  const answers = new Map<number, number>();
  let sent = 0;
  const forged = (n: number): string => {
    const now = Math.floor(Date.now() / 1000);
    const header = base64url({ alg: 'RS256', typ: 'at+jwt', kid: 'admin-issuer-1' });
    const payload = base64url({ iss: issuer.issuer, aud: issuer.audience, sub: `mallory-${n}`, iat: now, exp: now + 300 });
    return `${header}.${payload}.${Buffer.alloc(256, n % 251).toString('base64url')}`;
  };
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - startedMs) / 1000) * perSecond);
    for (; sent < due; sent++) {
      const token = sent % 2 === 0 ? `x${sent}` : forged(sent);
      const request = get(url, { agent, localAddress: STRANGER, headers: { authorization: `Bearer ${token}` } }, (response) => {
        answers.set(response.statusCode ?? 0, (answers.get(response.statusCode ?? 0) ?? 0) + 1);
        response.resume();
      });
      request.on('error', () => undefined);
    }
  }, 10);
  return {
    describe: () => `${sent} new tokens sent; answered ${JSON.stringify(Object.fromEntries(answers))}`,
    stop: () => {
      clearInterval(timer);
      agent.destroy();
    },
  };
}

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
    const { statuses, attack } = await staffDuring(() => newTokenFlood(me, issuer, 180), tokens, 150);
    assert.deepEqual(statuses, tokens.map(() => 200), attack);
  });

  it('answers 24 staff requests while another address holds 300 slow-loris connections', async () => {
    const token = await issuer.tokenFor('viewer');
    const { statuses, attack } = await staffDuring(() => slowLoris(service.adminBase ?? '', 300, STRANGER), Array.from({ length: 24 }, () => token), 100);
    assert.deepEqual(statuses, statuses.map(() => 200), attack);
  });
});
