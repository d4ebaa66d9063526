import { UNDEFINED_TABLE } from './database.js';
import type pg from 'pg';
import type { Config } from '../config.js';
import type { SunsetPolicy } from '../decision/types.js';

interface SunsetPolicyRow {
  sunset_at_ms: number;
  enforce: boolean;
  guide_url: string | null;
  updated_at: string;
}

export interface StoredSunsetPolicy extends SunsetPolicy {
  readonly updatedAt: string;
}

const SELECT = `SELECT (extract(epoch FROM sunset_at) * 1000)::float8 AS sunset_at_ms, enforce, guide_url,
                       to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at
                  FROM sunset_policy`;
const INSERT = 'INSERT INTO sunset_policy (sunset_at, enforce, guide_url) VALUES ($1, $2, $3) ON CONFLICT (singleton)';
const valuesOf = (policy: SunsetPolicy) => [new Date(policy.sunsetAt), policy.enforce, policy.guideUrl ?? null];

/** undefined while none is stored, or before its migration ran: then the environment's policy applies. */
export async function loadSunsetPolicy(sql: Pick<pg.ClientBase, 'query'>, lock = false): Promise<StoredSunsetPolicy | undefined> {
  let rows: SunsetPolicyRow[];
  try {
    ({ rows } = await sql.query<SunsetPolicyRow>(`${SELECT}${lock ? ' FOR UPDATE' : ''}`));
  } catch (error) {
    if ((error as { code?: unknown }).code === UNDEFINED_TABLE && !lock) return undefined;
    throw error;
  }
  const row = rows[0];
  if (row === undefined) return undefined;
  return { sunsetAt: row.sunset_at_ms, enforce: row.enforce, guideUrl: row.guide_url ?? undefined, updatedAt: row.updated_at };
}

/** The environment's policy as the first one, if none is stored; true when this call wrote it. */
export async function seedSunsetPolicy(sql: Pick<pg.ClientBase, 'query'>, policy: SunsetPolicy): Promise<boolean> {
  const { rowCount } = await sql.query(`${INSERT} DO NOTHING`, valuesOf(policy));
  return rowCount === 1;
}

export async function writeSunsetPolicy(sql: Pick<pg.ClientBase, 'query'>, policy: SunsetPolicy): Promise<void> {
  await sql.query(
    `${INSERT} DO UPDATE SET sunset_at = EXCLUDED.sunset_at, enforce = EXCLUDED.enforce, guide_url = EXCLUDED.guide_url,
                                  updated_at = now()`,
    valuesOf(policy),
  );
}

export function configuredSunsetPolicy(config: Pick<Config, 'apiKeySunsetAt' | 'apiKeySunsetEnforce' | 'migrationGuideUrl'>): SunsetPolicy {
  return { sunsetAt: config.apiKeySunsetAt, enforce: config.apiKeySunsetEnforce, guideUrl: config.migrationGuideUrl };
}
