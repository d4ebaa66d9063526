import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { canonicalApiKey, hashApiKey } from '../src/decision/api-key.js';
import { BENCH_CLIENT_IP } from './check-requests.js';

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

/**
 * The partner a large-installation benchmark talks to: site count + 1, after `count` filler sites, with
 * one key and BENCH_CLIENT_IP on its allowlist. Its id and key.
 */
export async function seedPartnerAmongFillers(pool: pg.Pool, count: number): Promise<{ readonly siteId: string; readonly key: string }> {
  await seedFillerSites(pool, count);
  const siteId = String(count + 1);
  const key = canonicalApiKey(randomUUID())!;
  await pool.query('INSERT INTO sites (id, name) VALUES ($1, $2)', [siteId, 'bench partner']);
  await pool.query('INSERT INTO api_keys (site_id, key_sha256, last_five) VALUES ($1, $2, $3)', [siteId, Buffer.from(hashApiKey(key), 'hex'), key.slice(-5)]);
  await pool.query('INSERT INTO allowlist_entries (site_id, cidr) VALUES ($1, $2)', [siteId, `${BENCH_CLIENT_IP}/32`]);
  return { siteId, key };
}
