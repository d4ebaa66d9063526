import pg from 'pg';
import { hashApiKey } from '../../src/decision/api-key.js';

export interface SiteRows {
  id: string;
  enabled?: boolean;
  keys?: Array<{ key: string; expiresAt?: Date; revoked?: boolean }>;
  cidrs?: string[];
}

/** Writes credential rows with plain SQL, as an operator or another tool might. */
export async function insertSite(sql: pg.Client | pg.Pool, site: SiteRows): Promise<string[]> {
  await sql.query('INSERT INTO sites (id, enabled) VALUES ($1, $2)', [site.id, site.enabled ?? true]);
  const keyIds: string[] = [];
  for (const key of site.keys ?? []) {
    const { rows } = await sql.query<{ id: string }>(
      `INSERT INTO api_keys (site_id, key_sha256, last_five, expires_at, revoked_at)
       VALUES ($1, $2, $3, $4, CASE WHEN $5 THEN now() END) RETURNING id::text`,
      [site.id, Buffer.from(hashApiKey(key.key), 'hex'), key.key.slice(-5), key.expiresAt ?? null, key.revoked ?? false],
    );
    keyIds.push(rows[0]?.id ?? '');
  }
  for (const cidr of site.cidrs ?? []) {
    await sql.query('INSERT INTO allowlist_entries (site_id, cidr) VALUES ($1, $2)', [site.id, cidr]);
  }
  return keyIds;
}

/** insertSite on a connection of its own to the database at `url`. */
export async function seedSite(url: string, site: SiteRows): Promise<string[]> {
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    return await insertSite(sql, site);
  } finally {
    await sql.end();
  }
}
