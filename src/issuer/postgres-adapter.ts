import { timingSafeEqual } from 'node:crypto';
import type pg from 'pg';
import type { Adapter, AdapterFactory, AdapterPayload } from 'oidc-provider';
import { sha256 } from '../common/sha256.js';

// Anything but a client is kept under the SHA-256 of its id (for a token, its value), and a client's secret as its
// SHA-256 (RFC 6819 §5.1.4.1.3; 256 random bits need no slow hash): the table holds nothing a client could present.

/** A client's metadata with its JWKS is a few kilobytes. */
const MAX_PAYLOAD_BYTES = 64 * 1024;

const KEPT_AS_IS = new Set(['Client']);

const SECRET_DIGEST = 'sha256:';

const digestOf = (secret: string): string => `${SECRET_DIGEST}${sha256(secret, 'hex')}`;

/** A payload read back and stored again keeps its digest. */
function storedSecret(secret: string): string {
  return secret.startsWith(SECRET_DIGEST) ? secret : digestOf(secret);
}

/** `held` is a digest, or the secret of a client the provider has just made; the digest itself is no secret. */
export function clientSecretMatches(held: unknown, presented: string): boolean {
  if (typeof held !== 'string') return false;
  const expected = Buffer.from(storedSecret(held));
  const actual = Buffer.from(digestOf(presented));
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

export function isSecretDigest(value: unknown): boolean {
  return typeof value === 'string' && value.startsWith(SECRET_DIGEST);
}

function withSecretDigest(payload: AdapterPayload): AdapterPayload {
  const secret = payload['client_secret'];
  return typeof secret === 'string' ? { ...payload, client_secret: storedSecret(secret) } : payload;
}

function storedId(model: string, id: string): string {
  return KEPT_AS_IS.has(model) ? id : sha256(id, 'hex');
}

class PostgresAdapter implements Adapter {
  constructor(
    private readonly pool: pg.Pool,
    private readonly model: string,
  ) {}

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    const { jti, ...rest } = payload;
    // The token's value is its jti: kept only as the row's hashed id, given back by find().
    const stored = this.model === 'Client' ? withSecretDigest(payload) : jti !== id ? payload : rest;
    const json = JSON.stringify(stored);
    if (Buffer.byteLength(json) > MAX_PAYLOAD_BYTES) throw new Error(`an oidc-provider ${this.model} of more than ${MAX_PAYLOAD_BYTES} bytes is not stored`);
    await this.pool.query(
      `INSERT INTO issuer_oidc_objects (model, id, payload, grant_id, expires_at)
       VALUES ($1, $2, $3, $4, CASE WHEN $5::int IS NULL THEN NULL ELSE now() + make_interval(secs => $5::int) END)
       ON CONFLICT (model, id) DO UPDATE SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id, expires_at = EXCLUDED.expires_at, consumed_at = NULL`,
      [this.model, storedId(this.model, id), json, typeof payload.grantId === 'string' ? payload.grantId : null, expiresIn ?? null],
    );
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    const { rows } = await this.pool.query<{ payload: AdapterPayload; consumed: boolean }>(
      `SELECT payload, consumed_at IS NOT NULL AS consumed FROM issuer_oidc_objects
       WHERE model = $1 AND id = $2 AND (expires_at IS NULL OR expires_at > now())`,
      [this.model, storedId(this.model, id)],
    );
    const row = rows[0];
    if (row === undefined) return undefined;
    const payload: AdapterPayload = KEPT_AS_IS.has(this.model) || row.payload.jti !== undefined ? row.payload : { ...row.payload, jti: id };
    return row.consumed ? { ...payload, consumed: true } : payload;
  }

  // Device flow and interactions are off: nothing is stored under a user code or a uid.
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }

  async findByUid(): Promise<undefined> {
    return undefined;
  }

  async consume(id: string): Promise<void> {
    await this.pool.query('UPDATE issuer_oidc_objects SET consumed_at = now() WHERE model = $1 AND id = $2', [this.model, storedId(this.model, id)]);
  }

  async destroy(id: string): Promise<void> {
    await this.pool.query('DELETE FROM issuer_oidc_objects WHERE model = $1 AND id = $2', [this.model, storedId(this.model, id)]);
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.pool.query('DELETE FROM issuer_oidc_objects WHERE grant_id = $1', [grantId]);
  }
}

export function postgresAdapter(pool: pg.Pool): AdapterFactory {
  return (model) => new PostgresAdapter(pool, model);
}

// Per statement, so that a backlog never holds a long lock.
const EXPIRED_BATCH = 1_000;

export async function deleteExpiredObjects(pool: pg.Pool): Promise<number> {
  const { rowCount } = await pool.query(
    `DELETE FROM issuer_oidc_objects WHERE ctid IN (
       SELECT ctid FROM issuer_oidc_objects WHERE expires_at <= now() LIMIT ${EXPIRED_BATCH})`,
  );
  return rowCount ?? 0;
}
