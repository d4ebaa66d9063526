import type pg from 'pg';
import type { ClientId, SiteAuthMethod, SiteId } from '../decision/types.js';
import type { ClientAuthMethod } from '../token/client-registration.js';
import type { SiteAccess } from './admin-records.js';
import { AdminError, lockSite, siteNotFound, type AdminTransactions } from './admin-transactions.js';

export interface TokenClientSummary {
  readonly clientId: ClientId;
  readonly siteId: SiteId;
  readonly note: string;
  /** null: added by hand, not registered at the issuer by the service. */
  readonly authMethod: ClientAuthMethod | null;
  readonly createdAt: string;
  readonly lastUsedAt: string | null;
}

/** How the service manages a client it registered at the issuer (RFC 7592); the token sealed. */
export interface StoredRegistration {
  readonly authMethod: ClientAuthMethod;
  readonly registrationClientUri: string;
  readonly sealedToken: Buffer;
  readonly keyId: string;
}

const clientNotFound = (clientId: ClientId): AdminError =>
  new AdminError('TOKEN_CLIENT_NOT_FOUND', `token client ${clientId} is not registered`, undefined, {
    field: 'clientId',
    step: 'take its id from the list of token clients',
    cliStep: 'see the registered ones with `sitekey-authz token-client list`',
  });

export type SiteTokenPolicy = Omit<SiteAccess, 'graceUntil'>;

interface TokenClientRow {
  client_id: string;
  site_id: string;
  note: string;
  auth_method: ClientAuthMethod | null;
  created_at: Date;
  last_used_at: Date | null;
}

const CLIENT_COLUMNS = 'client_id, site_id::text, note, auth_method, created_at, last_used_at';

function clientSummary(row: TokenClientRow): TokenClientSummary {
  return {
    clientId: row.client_id,
    siteId: row.site_id,
    note: row.note,
    authMethod: row.auth_method,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
  };
}

/** Which OAuth clients authenticate as which site, which methods a site accepts, and revoking a site's tokens. */
export class TokenAdmin {
  constructor(private readonly transactions: AdminTransactions) {}

  /** Binds a client that exists at the issuer already (`token-client add`). */
  async addClient(siteId: SiteId, clientId: ClientId, note: string): Promise<TokenClientSummary> {
    return this.addRegisteredClient(siteId, clientId, note, undefined);
  }

  /** With what manages the client at the issuer, where the service has just registered it. */
  async addRegisteredClient(siteId: SiteId, clientId: ClientId, note: string, registration: StoredRegistration | undefined): Promise<TokenClientSummary> {
    return this.transactions.change(async (sql) => {
      await lockSite(sql, siteId);
      const { rows } = await sql.query<TokenClientRow>(
        `INSERT INTO token_clients (client_id, site_id, note, auth_method, registration_client_uri, registration_token_sealed, registration_key_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (client_id) DO NOTHING RETURNING ${CLIENT_COLUMNS}`,
        [clientId, siteId, note, registration?.authMethod ?? null, registration?.registrationClientUri ?? null, registration?.sealedToken ?? null, registration?.keyId ?? null],
      );
      const inserted = rows[0];
      if (inserted === undefined) {
        const owner = await sql.query<{ site_id: string }>('SELECT site_id::text FROM token_clients WHERE client_id = $1', [clientId]);
        throw new AdminError(
          'TOKEN_CLIENT_EXISTS',
          `token client ${clientId} is already registered to site ${owner.rows[0]?.site_id ?? '(removed meanwhile)'}; a client belongs to one site`,
          undefined,
          { field: 'clientId', step: 'remove it there first to move it', cliStep: `\`sitekey-authz token-client remove ${clientId}\` first to move it` },
        );
      }
      if (registration === undefined) await this.transactions.audit(sql, 'token-client.add', siteId, { clientId, note });
      else await this.transactions.audit(sql, 'token-client.create', siteId, { clientId, note, authMethod: registration.authMethod });
      return clientSummary(inserted);
    });
  }

  async clientWithRegistration(clientId: ClientId): Promise<{ readonly client: TokenClientSummary; readonly registration: StoredRegistration | undefined }> {
    return this.transactions.read(async (sql) => {
      const { rows } = await sql.query<TokenClientRow & { registration_client_uri: string | null; registration_token_sealed: Buffer | null; registration_key_id: string | null }>(
        `SELECT ${CLIENT_COLUMNS}, registration_client_uri, registration_token_sealed, registration_key_id FROM token_clients WHERE client_id = $1`,
        [clientId],
      );
      const row = rows[0];
      if (row === undefined) throw clientNotFound(clientId);
      const registration =
        row.auth_method === null || row.registration_client_uri === null || row.registration_token_sealed === null || row.registration_key_id === null
          ? undefined
          : { authMethod: row.auth_method, registrationClientUri: row.registration_client_uri, sealedToken: row.registration_token_sealed, keyId: row.registration_key_id };
      return { client: clientSummary(row), registration };
    });
  }

  /** The issuer gave the client a new secret (and perhaps a new registration access token). */
  async recordSecretRotation(clientId: ClientId, sealedToken: Buffer, keyId: string): Promise<TokenClientSummary> {
    return this.transactions.change(async (sql) => {
      const { rows } = await sql.query<TokenClientRow>(
        `UPDATE token_clients SET registration_token_sealed = $2, registration_key_id = $3 WHERE client_id = $1 AND auth_method IS NOT NULL RETURNING ${CLIENT_COLUMNS}`,
        [clientId, sealedToken, keyId],
      );
      const changed = rows[0];
      if (changed === undefined) throw clientNotFound(clientId);
      await this.transactions.audit(sql, 'token-client.rotate-secret', changed.site_id, { clientId, authMethod: changed.auth_method });
      return clientSummary(changed);
    });
  }

  /** `atIssuer`: the service deleted the client at the issuer first (audited as such). */
  async removeClient(clientId: ClientId, atIssuer = false): Promise<TokenClientSummary> {
    return this.transactions.change(async (sql) => {
      const { rows } = await sql.query<TokenClientRow>(`DELETE FROM token_clients WHERE client_id = $1 RETURNING ${CLIENT_COLUMNS}`, [clientId]);
      const removed = rows[0];
      if (removed === undefined) throw clientNotFound(clientId);
      const details = removed.auth_method === null ? { clientId } : { clientId, authMethod: removed.auth_method, deletedAtIssuer: atIssuer };
      await this.transactions.audit(sql, 'token-client.remove', removed.site_id, details);
      return clientSummary(removed);
    });
  }

  /** A site that does not exist is an error, not an empty list. */
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

  /** Those issued before now, on the database's clock, as every replica reads it. */
  async revokeTokens(siteId: SiteId): Promise<SiteTokenPolicy> {
    return this.transactions.change(async (sql) => {
      const before = await this.lockPolicy(sql, siteId);
      const { rows } = await sql.query<{ at: Date }>('UPDATE sites SET tokens_not_before = now(), updated_at = now() WHERE id = $1 RETURNING tokens_not_before AS at', [siteId]);
      const at = (rows[0] as { at: Date }).at.toISOString();
      await this.transactions.audit(sql, 'site.revoke-tokens', siteId, { tokensNotBefore: at, before: { tokensNotBefore: before.tokensNotBefore }, after: { tokensNotBefore: at } });
      return { ...before, tokensNotBefore: at };
    });
  }

  private async lockPolicy(sql: pg.ClientBase, siteId: SiteId): Promise<SiteTokenPolicy> {
    type PolicyRow = { auth_method: string; tokens_not_before: Date | null };
    const row = await lockSite<PolicyRow>(sql, siteId, 'auth_method, tokens_not_before');
    return { siteId, authMethod: row.auth_method === 'both' ? 'both' : 'tokens', tokensNotBefore: row.tokens_not_before?.toISOString() ?? null };
  }
}
