import { createHash, hkdfSync, randomBytes } from 'node:crypto';
import type pg from 'pg';
import { openBox, sealBox } from '../../common/sealed-box.js';

/** The tokens the provider gave for a person; they stay on the server, the browser holds an id. */
export interface SessionTokens {
  readonly accessToken: string;
  readonly refreshToken: string | undefined;
  readonly idToken: string | undefined;
}

export interface ConsoleSession extends SessionTokens {
  readonly subject: string;
  readonly csrfToken: string;
  readonly expiresAt: Date;
}

export function newSecretId(): string {
  return randomBytes(32).toString('base64url');
}

function idHash(id: string): Buffer {
  return createHash('sha256').update(id).digest();
}

// From the cookie's id, which only the browser has (the table keeps its SHA-256): whoever reads the tables gets
// neither a cookie nor a token to present.
function sealingKey(id: string): Buffer {
  return Buffer.from(hkdfSync('sha256', id, '', 'sitekey-authz console session', 32));
}

const NOTHING = Buffer.alloc(0);
const seal = (key: Buffer, text: string): string => sealBox(key, Buffer.from(text, 'utf8'), NOTHING).toString('base64');
const unseal = (key: Buffer, sealed: string) => openBox(key, Buffer.from(sealed, 'base64'), NOTHING)?.toString('utf8');

const sealOptional = (key: Buffer, text: string | undefined): string | null => (text === undefined ? null : seal(key, text));
const unsealOptional = (key: Buffer, sealed: string | null): string | undefined => (sealed === null ? undefined : unseal(key, sealed));

/** Keyed by the SHA-256 of the cookie's id; expired rows are never returned, and deleted as new ones are written. */
export class SessionStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Made once per database, so that a browser may come back to another replica than the one it left. */
  async signInKeyMaterial(): Promise<Buffer> {
    await this.pool.query('INSERT INTO admin_console_sign_in_key (key_material) VALUES ($1) ON CONFLICT DO NOTHING', [randomBytes(32)]);
    const { rows } = await this.pool.query<{ key_material: Buffer }>('SELECT key_material FROM admin_console_sign_in_key');
    const row = rows[0];
    if (row === undefined) throw new Error('the console sign-in key is missing from admin_console_sign_in_key');
    return row.key_material;
  }

  async createSession(id: string, session: ConsoleSession): Promise<void> {
    await this.pool.query('DELETE FROM admin_console_sessions WHERE expires_at < now()');
    const key = sealingKey(id);
    await this.pool.query(
      `INSERT INTO admin_console_sessions (id_sha256, subject, csrf_token, access_token, refresh_token, id_token, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [idHash(id), session.subject, session.csrfToken, seal(key, session.accessToken), sealOptional(key, session.refreshToken), sealOptional(key, session.idToken), session.expiresAt],
    );
  }

  async findSession(id: string): Promise<ConsoleSession | undefined> {
    const { rows } = await this.pool.query<{
      subject: string;
      csrf_token: string;
      access_token: string;
      refresh_token: string | null;
      id_token: string | null;
      expires_at: Date;
    }>(
      'SELECT subject, csrf_token, access_token, refresh_token, id_token, expires_at FROM admin_console_sessions WHERE id_sha256 = $1 AND expires_at > now()',
      [idHash(id)],
    );
    const row = rows[0];
    if (row === undefined) return undefined;
    const key = sealingKey(id);
    const accessToken = unseal(key, row.access_token);
    if (accessToken === undefined) return undefined;
    return {
      subject: row.subject,
      csrfToken: row.csrf_token,
      accessToken,
      refreshToken: unsealOptional(key, row.refresh_token),
      idToken: unsealOptional(key, row.id_token),
      expiresAt: row.expires_at,
    };
  }

  /** A provider that sends no new refresh token keeps the old one valid. */
  async replaceTokens(id: string, tokens: SessionTokens): Promise<void> {
    const key = sealingKey(id);
    await this.pool.query(
      `UPDATE admin_console_sessions SET access_token = $2, refresh_token = COALESCE($3, refresh_token), id_token = COALESCE($4, id_token)
       WHERE id_sha256 = $1`,
      [idHash(id), seal(key, tokens.accessToken), sealOptional(key, tokens.refreshToken), sealOptional(key, tokens.idToken)],
    );
  }

  async deleteSession(id: string): Promise<{ readonly idToken: string | undefined } | undefined> {
    const { rows } = await this.pool.query<{ id_token: string | null }>('DELETE FROM admin_console_sessions WHERE id_sha256 = $1 RETURNING id_token', [
      idHash(id),
    ]);
    const row = rows[0];
    return row && { idToken: unsealOptional(sealingKey(id), row.id_token) };
  }
}
