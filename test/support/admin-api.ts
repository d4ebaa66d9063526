import assert from 'node:assert/strict';
import pg from 'pg';
import type { Page } from 'playwright-core';
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

/** Allowed requests of a site, `count` of them one a minute back from `endsAt` (default an hour ago). */
export interface RecordedRequests {
  readonly siteId: string;
  readonly method: AuthMethod;
  readonly count: number;
  readonly endsAt?: number;
}

/** Allowed requests as serve's observer records them, flushed to the hourly counts the reports read. */
export async function recordAllowedRequests(databaseUrl: string, requests: readonly RecordedRequests[]): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    const usage = new AuthUsageRecorder({ pool, flushSeconds: 3_600, retentionDays: 400, maxGroups: 1_000, logger: createLogger('silent') });
    for (const { siteId, method, count, endsAt = Date.now() - 3_600_000 } of requests) for (let i = 0; i < count; i++) usage.record(siteId, method, endsAt - i * 60_000);
    await usage.stop();
  } finally {
    await pool.end();
  }
}

/** A change a console page sent to the API. */
export interface SentChange {
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
}

/** Every change `page` sends to the API from now on (GETs left out), in order, as the list fills. */
export function changesSentBy(page: Page): SentChange[] {
  const sent: SentChange[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.pathname.startsWith('/api/') && request.method() !== 'GET') sent.push({ method: request.method(), path: url.pathname, body: request.postDataJSON() });
  });
  return sent;
}
