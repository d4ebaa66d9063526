import assert from 'node:assert/strict';
import pg from 'pg';
import type { AuthMethod } from '../../src/decision/types.js';
import { createLogger } from '../../src/observe/logger.js';
import { AuthUsageRecorder } from '../../src/store/auth-usage-recorder.js';

/** The admin API as one person calls it, with their bearer token. */
export interface AdminApi {
  call(method: string, path: string, body?: unknown): Promise<{ readonly status: number; readonly body: any }>;
  /** The answer's body, after asserting its status. */
  ok(method: string, path: string, body?: unknown, status?: number): Promise<any>;
}

export function adminApi(adminBase: string, token: string): AdminApi {
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${adminBase}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
  };
  return {
    call,
    ok: async (method, path, body, status = 200) => {
      const answer = await call(method, path, body);
      assert.equal(answer.status, status, `${method} ${path}: ${JSON.stringify(answer.body)}`);
      return answer.body;
    },
  };
}

/** Allowed requests of a site as serve's observer records them (one a minute, ending an hour ago), flushed. */
export async function recordAllowedRequests(databaseUrl: string, counts: ReadonlyArray<readonly [siteId: string, method: AuthMethod, count: number]>): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    const usage = new AuthUsageRecorder({ pool, flushSeconds: 3_600, retentionDays: 400, maxGroups: 1_000, logger: createLogger('silent') });
    const end = Date.now() - 3_600_000;
    for (const [siteId, method, count] of counts) for (let i = 0; i < count; i++) usage.record(siteId, method, end - i * 60_000);
    await usage.stop();
  } finally {
    await pool.end();
  }
}
