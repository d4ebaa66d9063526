import type pg from 'pg';

/**
 * Sites 1…count, each with 2 keys nobody knows and 3 allowlist entries (two IPv4 /26, one IPv6 /64,
 * all outside 127.0.0.0/8), written in three statements: the bulk of a large installation, around
 * the few sites a benchmark talks to.
 */
export async function seedFillerSites(pool: pg.Pool, count: number): Promise<void> {
  await pool.query(`INSERT INTO sites (id, name) SELECT g, 'site ' || g FROM generate_series(1, $1::int) g`, [count]);
  await pool.query(
    `INSERT INTO api_keys (site_id, key_sha256, last_five)
     SELECT g, sha256(convert_to(gen_random_uuid()::text, 'UTF8')), right(md5(random()::text), 5)
       FROM generate_series(1, $1::int) g, generate_series(1, 2)`,
    [count],
  );
  await pool.query(
    `INSERT INTO allowlist_entries (site_id, cidr)
     SELECT g, (CASE n WHEN 3 THEN '2001:db8:' || to_hex(g >> 16) || ':' || to_hex(g & 65535) || '::/64'
                      ELSE '10.' || (g >> 8 & 255) || '.' || (g & 255) || '.' || (n * 64) || '/26' END)::cidr
       FROM generate_series(1, $1::int) g, generate_series(1, 3) n`,
    [count],
  );
}
