import { UNDEFINED_TABLE } from './database.js';
import type pg from 'pg';
import type { Config } from '../config.js';
import type { SunsetPolicy } from '../decision/types.js';

interface SunsetPolicyRow {
  sunset_at_ms: number;
  enforce: boolean;
  guide_url: string | null;
}

/** The policy as stored, with when it was last changed. */
export interface StoredSunsetPolicy extends SunsetPolicy {
  readonly updatedAt: string;
}

const SELECT = `SELECT (extract(epoch FROM sunset_at) * 1000)::float8 AS sunset_at_ms, enforce, guide_url,
                       to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at
                  FROM sunset_policy`;


/**
 * The sunset policy in the database; undefined while it holds none (nobody seeded or set it yet), or
 * while its schema is older than this code (a rolling upgrade whose migration has not run yet):
 * then the environment's policy applies, as it did before the table existed.
 */
export async function loadSunsetPolicy(sql: Pick<pg.ClientBase, 'query'>, lock = false): Promise<StoredSunsetPolicy | undefined> {
  let rows: Array<SunsetPolicyRow & { updated_at: string }>;
  try {
    ({ rows } = await sql.query<SunsetPolicyRow & { updated_at: string }>(`${SELECT}${lock ? ' FOR UPDATE' : ''}`));
  } catch (error) {
    if ((error as { code?: unknown }).code === UNDEFINED_TABLE && !lock) return undefined;
    throw error;
  }
  const row = rows[0];
  if (row === undefined) return undefined;
  return { sunsetAt: row.sunset_at_ms, enforce: row.enforce, guideUrl: row.guide_url ?? undefined, updatedAt: row.updated_at };
}

/**
 * Writes the environment's policy as the first one, if the database holds none: the old variables
 * seed it once, and from then on the database decides. True when this call wrote it.
 */
export async function seedSunsetPolicy(sql: Pick<pg.ClientBase, 'query'>, policy: SunsetPolicy): Promise<boolean> {
  const { rowCount } = await sql.query(
    'INSERT INTO sunset_policy (sunset_at, enforce, guide_url) VALUES ($1, $2, $3) ON CONFLICT (singleton) DO NOTHING',
    [new Date(policy.sunsetAt), policy.enforce, policy.guideUrl ?? null],
  );
  return rowCount === 1;
}

/** Replaces the stored policy (inserting it if there is none); the trigger tells every replica. */
export async function writeSunsetPolicy(sql: Pick<pg.ClientBase, 'query'>, policy: SunsetPolicy): Promise<void> {
  await sql.query(
    `INSERT INTO sunset_policy (sunset_at, enforce, guide_url) VALUES ($1, $2, $3)
       ON CONFLICT (singleton) DO UPDATE SET sunset_at = EXCLUDED.sunset_at, enforce = EXCLUDED.enforce,
                                            guide_url = EXCLUDED.guide_url, updated_at = now()`,
    [new Date(policy.sunsetAt), policy.enforce, policy.guideUrl ?? null],
  );
}

/** The environment's sunset policy: only the first value the database gets, when it holds none. */
export function configuredSunsetPolicy(config: Pick<Config, 'apiKeySunsetAt' | 'apiKeySunsetEnforce' | 'migrationGuideUrl'>): SunsetPolicy {
  return { sunsetAt: config.apiKeySunsetAt, enforce: config.apiKeySunsetEnforce, guideUrl: config.migrationGuideUrl };
}
