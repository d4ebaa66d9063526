import type pg from 'pg';
import type { ClientId, SiteAuthMethod, SiteId } from '../decision/types.js';
import { AdminError, siteNotFound, type AdminTransactions } from './admin-transactions.js';

/** A token client as `token-client list` shows it. */
export interface TokenClientSummary {
  readonly clientId: ClientId;
  readonly siteId: SiteId;
  readonly note: string;
  readonly createdAt: string;
  readonly lastUsedAt: string | null;
}

/** Which methods a site accepts, and since when its tokens count. */
export interface SiteTokenPolicy {
  readonly siteId: SiteId;
  readonly authMethod: SiteAuthMethod;
  /** Tokens issued before this are refused; null: none revoked. */
  readonly tokensNotBefore: string | null;
}

interface TokenClientRow {
  client_id: string;
  site_id: string;
  note: string;
  created_at: Date;
  last_used_at: Date | null;
}

const CLIENT_COLUMNS = 'client_id, site_id::text, note, created_at, last_used_at';

function clientSummary(row: TokenClientRow): TokenClientSummary {
  return {
    clientId: row.client_id,
    siteId: row.site_id,
    note: row.note,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
  };
}

/**
 * Token-based authentication as account managers run it: which OAuth clients authenticate as which
 * site, which methods a site accepts, and revoking a site's tokens. Each change is audited in its
 * transaction; the triggers carry it to every replica.
 */
export class TokenAdmin {
  constructor(private readonly transactions: AdminTransactions) {}

  async addClient(siteId: SiteId, clientId: ClientId, note: string): Promise<TokenClientSummary> {
    return this.transactions.change(async (sql) => {
      const site = await sql.query('SELECT 1 FROM sites WHERE id = $1 FOR UPDATE', [siteId]);
      if (site.rowCount === 0) throw siteNotFound(siteId);
      const { rows } = await sql.query<TokenClientRow>(
        `INSERT INTO token_clients (client_id, site_id, note) VALUES ($1, $2, $3) ON CONFLICT (client_id) DO NOTHING RETURNING ${CLIENT_COLUMNS}`,
        [clientId, siteId, note],
      );
      const inserted = rows[0];
      if (inserted === undefined) {
        const owner = await sql.query<{ site_id: string }>('SELECT site_id::text FROM token_clients WHERE client_id = $1', [clientId]);
        throw new AdminError(
          'TOKEN_CLIENT_EXISTS',
          `token client ${clientId} is already registered to site ${owner.rows[0]?.site_id ?? '(removed meanwhile)'}; a client belongs to one site: \`sitekey-authz token-client remove ${clientId}\` first to move it`,
        );
      }
      await this.transactions.audit(sql, 'token-client.add', siteId, { clientId, note });
      return clientSummary(inserted);
    });
  }

  async removeClient(clientId: ClientId): Promise<TokenClientSummary> {
    return this.transactions.change(async (sql) => {
      const { rows } = await sql.query<TokenClientRow>(`DELETE FROM token_clients WHERE client_id = $1 RETURNING ${CLIENT_COLUMNS}`, [clientId]);
      const removed = rows[0];
      if (removed === undefined) {
        throw new AdminError('TOKEN_CLIENT_NOT_FOUND', `token client ${clientId} is not registered; see the registered ones with \`sitekey-authz token-client list\``);
      }
      await this.transactions.audit(sql, 'token-client.remove', removed.site_id, { clientId });
      return clientSummary(removed);
    });
  }

  /** Every client, or the site's; a site that does not exist is an error, not an empty list. */
  async listClients(siteId: SiteId | undefined): Promise<TokenClientSummary[]> {
    return this.transactions.read(async (sql) => {
      if (siteId !== undefined) {
        const site = await sql.query('SELECT 1 FROM sites WHERE id = $1', [siteId]);
        if (site.rowCount === 0) throw siteNotFound(siteId);
      }
      const { rows } = await sql.query<TokenClientRow>(
        `SELECT ${CLIENT_COLUMNS} FROM token_clients WHERE $1::bigint IS NULL OR site_id = $1 ORDER BY site_id, client_id`,
        [siteId ?? null],
      );
      return rows.map(clientSummary);
    });
  }

  /** Sets the methods the site accepts; returns the policy and the method it had. */
  async setAuthMethod(siteId: SiteId, method: SiteAuthMethod): Promise<{ readonly policy: SiteTokenPolicy; readonly previous: SiteAuthMethod }> {
    return this.transactions.change(async (sql) => {
      const before = await this.lockPolicy(sql, siteId);
      if (before.authMethod !== method) {
        await sql.query('UPDATE sites SET auth_method = $2, updated_at = now() WHERE id = $1', [siteId, method]);
        await this.transactions.audit(sql, 'site.auth', siteId, { authMethod: method, previous: before.authMethod });
      }
      return { policy: { ...before, authMethod: method }, previous: before.authMethod };
    });
  }

  /** Refuses the site's tokens issued before now (the database's clock, as every replica reads it). */
  async revokeTokens(siteId: SiteId): Promise<SiteTokenPolicy> {
    return this.transactions.change(async (sql) => {
      const before = await this.lockPolicy(sql, siteId);
      const { rows } = await sql.query<{ at: Date }>('UPDATE sites SET tokens_not_before = now(), updated_at = now() WHERE id = $1 RETURNING tokens_not_before AS at', [siteId]);
      const at = (rows[0] as { at: Date }).at.toISOString();
      await this.transactions.audit(sql, 'site.revoke-tokens', siteId, { tokensNotBefore: at });
      return { ...before, tokensNotBefore: at };
    });
  }

  private async lockPolicy(sql: pg.ClientBase, siteId: SiteId): Promise<SiteTokenPolicy> {
    const { rows } = await sql.query<{ auth_method: string; tokens_not_before: Date | null }>(
      'SELECT auth_method, tokens_not_before FROM sites WHERE id = $1 FOR UPDATE',
      [siteId],
    );
    const row = rows[0];
    if (row === undefined) throw siteNotFound(siteId);
    return { siteId, authMethod: row.auth_method === 'both' ? 'both' : 'tokens', tokensNotBefore: row.tokens_not_before?.toISOString() ?? null };
  }
}
