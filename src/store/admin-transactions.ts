import { UNDEFINED_TABLE } from './database.js';
import { withPooledClient } from './pooled-client.js';
import type pg from 'pg';
import type { SiteId } from '../decision/types.js';

/** Why an administrative change was refused; the message says what to type instead. */
export type AdminErrorCode =
  | 'SITE_EXISTS'
  | 'SITE_NOT_FOUND'
  | 'KEY_NOT_FOUND'
  | 'KEY_DUPLICATE'
  | 'CIDR_NOT_ON_ALLOWLIST'
  | 'BROWNOUT_NOT_FOUND'
  | 'TOKEN_CLIENT_EXISTS'
  | 'TOKEN_CLIENT_NOT_FOUND'
  | 'TOKEN_CLIENT_NOT_MANAGED'
  | 'REGISTRATION_OFF'
  | 'REGISTRATION_TOKEN_UNREADABLE'
  | 'ISSUER_REFUSED'
  | 'ISSUER_UNREACHABLE'
  | 'ISSUER_ANSWER_UNUSABLE'
  | 'SCHEMA_MISSING';

export class AdminError extends Error {
  constructor(
    readonly code: AdminErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'AdminError';
  }
}

export const siteNotFound = (siteId: SiteId): AdminError =>
  new AdminError('SITE_NOT_FOUND', `site ${siteId} does not exist; add it with \`sitekey-authz site add ${siteId}\`, or see \`sitekey-authz site list\``);


/** A database without our tables gets a message that says how to create them. */
function schemaHint(error: unknown): unknown {
  if ((error as { code?: string }).code !== UNDEFINED_TABLE) return error;
  return new AdminError('SCHEMA_MISSING', 'the database has no sitekey-authz tables yet; create them with `sitekey-authz migrate`');
}

/** How every administrative command reads, and changes in one transaction with its audit row. */
export class AdminTransactions {
  constructor(
    private readonly pool: pg.Pool,
    /** Who makes the changes: the OS user or --actor. */
    private readonly actor: string,
  ) {}

  async read<T>(work: (sql: pg.ClientBase) => Promise<T>): Promise<T> {
    try {
      return await withPooledClient(this.pool, work, false);
    } catch (error) {
      throw schemaHint(error);
    }
  }

  change<T>(work: (sql: pg.ClientBase) => Promise<T>): Promise<T> {
    return this.read(async (sql) => {
      await sql.query('BEGIN');
      try {
        const result = await work(sql);
        await sql.query('COMMIT');
        return result;
      } catch (error) {
        await sql.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    });
  }

  async audit(sql: pg.ClientBase, action: string, siteId: SiteId | null, details: Record<string, unknown>): Promise<void> {
    await sql.query('INSERT INTO audit_log (actor, action, site_id, details) VALUES ($1, $2, $3, $4)', [
      this.actor,
      action,
      siteId,
      JSON.stringify(details),
    ]);
  }
}
