import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { hashApiKey, lastFive, maskApiKey } from '../decision/api-key.js';
import type { ApiKey, KeyId, SiteId } from '../decision/types.js';
import { AdminTransactions } from './admin-transactions.js';
import type { AllowlistEntry } from '../allowlist/allowlist-entry.js';
import { AuditLog } from './audit-log.js';
import { RefusalFacts } from './refusal-facts.js';
import { SunsetAdmin } from './sunset-admin.js';
import { SunsetReports } from './sunset-reports.js';
import { instantText, optionalInstantText, type StoredTimestamp } from './timestamps.js';
import { TokenAdmin } from './token-admin.js';
import { UsageImpact } from './usage-impact.js';
import type { AuditActor } from './audit-actor.js';

export { AdminError, adminErrorText } from './admin-transactions.js';
import { AdminError, siteNotFound, lockSite } from './admin-transactions.js';
import {
  KEY_COLUMNS,
  keySummary,
  SITE_SUMMARY,
  siteSummary,
  UNIQUE_VIOLATION,
  type AllowlistEntrySummary,
  type IssuedKey,
  type KeyOptions,
  type KeyRoll,
  type KeySummary,
  type KeySummaryRow,
  type SiteAccess,
  type SiteSummary,
  type SiteSummaryRow,
} from './admin-records.js';
export type { AllowlistEntrySummary, IssuedKey, KeyOptions, KeyRoll, KeySummary, SiteAccess, SiteSummary } from './admin-records.js';

async function allowlistSize(sql: pg.ClientBase, siteId: SiteId): Promise<number> {
  const { rows } = await sql.query<{ entries: string }>('SELECT count(*)::text AS entries FROM allowlist_entries WHERE site_id = $1', [siteId]);
  return Number(rows[0]?.entries ?? 0);
}

/** Every administrative change, in one transaction with its audit_log row. Keys are kept as SHA-256 and last five. */
export class CredentialAdmin {
  private readonly transactions: AdminTransactions;
  readonly sunset: SunsetAdmin;
  readonly sunsetReports: SunsetReports;
  readonly tokens: TokenAdmin;
  readonly auditLog: AuditLog;
  readonly refusals: RefusalFacts;
  readonly impact: UsageImpact;

  constructor(
    pool: pg.Pool,
    /** Who makes the changes; undefined for a request of no one, which may read but never change. */
    actor: AuditActor | undefined,
  ) {
    this.transactions = new AdminTransactions(pool, actor);
    this.sunset = new SunsetAdmin(this.transactions);
    this.sunsetReports = new SunsetReports(this.transactions);
    this.tokens = new TokenAdmin(this.transactions);
    this.auditLog = new AuditLog(this.transactions);
    this.refusals = new RefusalFacts(this.transactions);
    this.impact = new UsageImpact(this.transactions);
  }

  async addSite(siteId: SiteId, name: string): Promise<SiteSummary> {
    return this.transactions.change(async (sql) => {
      const inserted = await sql.query('INSERT INTO sites (id, name) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING', [siteId, name]);
      if (inserted.rowCount === 0) {
        throw new AdminError('SITE_EXISTS', `site ${siteId} already exists`, undefined, { field: 'id', step: 'open it among the sites, or give another id', cliStep: 'see it with `sitekey-authz site list`' });
      }
      await this.transactions.audit(sql, 'site.add', siteId, { name });
      return this.site(sql, siteId);
    });
  }

  /** Disabling refuses the site's requests (101) and keeps its keys; returns whether anything changed. */
  async setSiteEnabled(siteId: SiteId, enabled: boolean): Promise<{ readonly site: SiteSummary; readonly changed: boolean }> {
    return this.transactions.change(async (sql) => {
      const before = await lockSite<{ enabled: boolean }>(sql, siteId, 'enabled');
      const changed = before.enabled !== enabled;
      if (changed) {
        await sql.query('UPDATE sites SET enabled = $2, updated_at = now() WHERE id = $1', [siteId, enabled]);
        await this.transactions.audit(sql, enabled ? 'site.enable' : 'site.disable', siteId, { before: { enabled: before.enabled }, after: { enabled } });
      }
      return { site: await this.site(sql, siteId), changed };
    });
  }

  async listSites(): Promise<SiteSummary[]> {
    return this.transactions.read(async (sql) => (await sql.query<SiteSummaryRow>(`${SITE_SUMMARY} ORDER BY s.id`)).rows.map(siteSummary));
  }

  async getSite(siteId: SiteId): Promise<SiteSummary> {
    return this.transactions.read((sql) => this.site(sql, siteId));
  }

  /** Every site's method, grace and token cut-off (or one site's: SITE_NOT_FOUND when it does not exist). */
  async siteAccess(siteId?: SiteId): Promise<SiteAccess[]> {
    return this.transactions.read(async (sql) => {
      const { rows } = await sql.query<{ id: string; auth_method: string; apikey_grace_until: StoredTimestamp | null; tokens_not_before: StoredTimestamp | null }>(
        'SELECT id::text, auth_method, apikey_grace_until, tokens_not_before FROM sites WHERE $1::bigint IS NULL OR id = $1 ORDER BY id',
        [siteId ?? null],
      );
      if (siteId !== undefined && rows.length === 0) throw siteNotFound(siteId);
      return rows.map((row) => ({
        siteId: row.id,
        authMethod: row.auth_method === 'both' ? 'both' : 'tokens',
        graceUntil: optionalInstantText(row.apikey_grace_until),
        tokensNotBefore: optionalInstantText(row.tokens_not_before),
      }));
    });
  }

  /** A new random key (UUID v4); the caller shows `apiKey` once, it is not kept anywhere. */
  async issueKey(siteId: SiteId, options: KeyOptions): Promise<IssuedKey> {
    const apiKey = randomUUID();
    const key = await this.storeKey('key.issue', siteId, apiKey, options);
    return { ...key, apiKey };
  }

  /** A key the partner already has, e.g. from a system being replaced. */
  async importKey(siteId: SiteId, apiKey: ApiKey, options: KeyOptions): Promise<KeySummary> {
    return this.storeKey('key.import', siteId, apiKey, options);
  }

  /** A new key, and an end for the old one (never later than its own): the partner swaps keys while both work. */
  async rollKey(siteId: SiteId, keyId: KeyId, oldExpiresAt: Date, options: KeyOptions): Promise<KeyRoll> {
    const apiKey = randomUUID();
    return this.transactions.change(async (sql) => {
      await lockSite(sql, siteId);
      const { rows } = await sql.query<KeySummaryRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 AND site_id = $2 FOR UPDATE`, [keyId, siteId]);
      const old = rows[0];
      if (old === undefined) throw await keyNotFound(sql, siteId, keyId);
      if (old.status !== 'active') throw new AdminError('KEY_NOT_ACTIVE', `key ${keyId} of site ${siteId} is ${old.status}: only an active key can be rolled`, undefined, {
          field: 'keyId',
          step: 'issue a new key instead',
          cliStep: `issue a new key with \`sitekey-authz key issue ${siteId}\``,
        });
      // LEAST ignores NULL: a key without an end gets the one asked for.
      const ended = await sql.query<{ ends: StoredTimestamp; kept: boolean }>('UPDATE api_keys SET expires_at = LEAST(expires_at, $2) WHERE id = $1 RETURNING expires_at AS ends, expires_at < $2 AS kept', [keyId, oldExpiresAt]);
      const { ends: endsAt, kept: keptSooner } = ended.rows[0] as { ends: StoredTimestamp; kept: boolean };
      const replaced = { keyId, maskedKey: maskApiKey(old.last_five), expiresAt: instantText(endsAt) };
      const key = await this.insertKey(sql, siteId, apiKey, options);
      await this.transactions.audit(sql, 'key.roll', siteId, { keyId: key.keyId, maskedKey: key.maskedKey, expiresAt: key.expiresAt, note: key.note, replaced });
      const warnings = keptSooner ? [`the old key ${keyId} (${replaced.maskedKey}) already expires sooner, at ${replaced.expiresAt}, and keeps that expiry`] : [];
      return { key: { ...key, apiKey }, replaced, warnings };
    });
  }

  /** Revoking a revoked key changes nothing and says so. */
  async revokeKey(siteId: SiteId, keyId: KeyId): Promise<{ readonly key: KeySummary; readonly changed: boolean }> {
    return this.transactions.change(async (sql) => {
      await lockSite(sql, siteId);
      const { rows } = await sql.query<KeySummaryRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 AND site_id = $2`, [keyId, siteId]);
      const before = rows[0];
      if (before === undefined) throw await keyNotFound(sql, siteId, keyId);
      if (before.revoked_at !== null) return { key: keySummary(before), changed: false };
      const revoked = await sql.query<KeySummaryRow>(`UPDATE api_keys SET revoked_at = now() WHERE id = $1 RETURNING ${KEY_COLUMNS}`, [keyId]);
      await this.transactions.audit(sql, 'key.revoke', siteId, { keyId, maskedKey: maskApiKey(before.last_five), before: { status: before.status }, after: { status: 'revoked' } });
      return { key: keySummary(revoked.rows[0] as KeySummaryRow), changed: true };
    });
  }

  async listKeys(siteId: SiteId): Promise<KeySummary[]> {
    return this.transactions.read(async (sql) => {
      await this.site(sql, siteId);
      const { rows } = await sql.query<KeySummaryRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE site_id = $1 ORDER BY api_keys.id`, [siteId]);
      return rows.map(keySummary);
    });
  }

  /** Networks already on the allowlist are reported, not doubled. */
  async allowNetworks(
    siteId: SiteId,
    entries: readonly AllowlistEntry[],
  ): Promise<{ readonly added: string[]; readonly alreadyAllowed: string[] }> {
    return this.transactions.change(async (sql) => {
      await lockSite(sql, siteId);
      const entriesBefore = await allowlistSize(sql, siteId);
      const added: string[] = [];
      const alreadyAllowed: string[] = [];
      for (const { cidr } of entries) {
        const inserted = await sql.query('INSERT INTO allowlist_entries (site_id, cidr) VALUES ($1, $2) ON CONFLICT DO NOTHING', [siteId, cidr]);
        (inserted.rowCount === 0 ? alreadyAllowed : added).push(cidr);
      }
      if (added.length > 0) {
        await this.transactions.audit(sql, 'ip.allow', siteId, { cidrs: added, before: { entries: entriesBefore }, after: { entries: entriesBefore + added.length } });
      }
      return { added, alreadyAllowed };
    });
  }

  /** All of them, or, when one is not on the allowlist, none. */
  async revokeNetworks(siteId: SiteId, entries: readonly AllowlistEntry[]): Promise<{ readonly removed: string[] }> {
    return this.transactions.change(async (sql) => {
      await lockSite(sql, siteId);
      const entriesBefore = await allowlistSize(sql, siteId);
      const cidrs = entries.map((entry) => entry.cidr);
      // Matched by cidr equality, one at a time: PostgreSQL's text of an address can differ from
      // ours (::1.2.3.4 against ::102:304), so comparing texts could miss a row that was deleted.
      const missing: string[] = [];
      for (const cidr of cidrs) {
        const deleted = await sql.query('DELETE FROM allowlist_entries WHERE site_id = $1 AND cidr = $2::cidr', [siteId, cidr]);
        if (deleted.rowCount === 0) missing.push(cidr);
      }
      if (missing.length > 0) throw await notOnAllowlist(sql, siteId, missing);
      await this.transactions.audit(sql, 'ip.revoke', siteId, { cidrs, before: { entries: entriesBefore }, after: { entries: entriesBefore - cidrs.length } });
      return { removed: cidrs };
    });
  }

  async listNetworks(siteId: SiteId): Promise<AllowlistEntrySummary[]> {
    return this.transactions.read(async (sql) => {
      await this.site(sql, siteId);
      const { rows } = await sql.query<{ cidr: string; created_at: StoredTimestamp }>(
        'SELECT cidr::text, created_at FROM allowlist_entries WHERE site_id = $1 ORDER BY family(cidr), cidr',
        [siteId],
      );
      return rows.map((row) => ({ cidr: row.cidr, createdAt: instantText(row.created_at) }));
    });
  }

  private async storeKey(action: string, siteId: SiteId, apiKey: ApiKey, options: KeyOptions): Promise<KeySummary> {
    return this.transactions.change(async (sql) => {
      await lockSite(sql, siteId);
      const key = await this.insertKey(sql, siteId, apiKey, options);
      await this.transactions.audit(sql, action, siteId, { keyId: key.keyId, maskedKey: key.maskedKey, expiresAt: key.expiresAt, note: key.note });
      return key;
    });
  }

  private async insertKey(sql: pg.ClientBase, siteId: SiteId, apiKey: ApiKey, options: KeyOptions): Promise<KeySummary> {
    try {
      const { rows } = await sql.query<KeySummaryRow>(
        `INSERT INTO api_keys (site_id, key_sha256, last_five, expires_at, note)
         VALUES ($1, decode($2, 'hex'), $3, $4, $5) RETURNING ${KEY_COLUMNS}`,
        [siteId, hashApiKey(apiKey), lastFive(apiKey), options.expiresAt ?? null, options.note],
      );
      return keySummary(rows[0] as KeySummaryRow);
    } catch (error) {
      if ((error as { code?: string }).code === UNIQUE_VIOLATION) {
        throw new AdminError('KEY_DUPLICATE', 'this key is already registered', undefined, {
          field: 'key',
          step: 'issue a fresh one for the partner instead',
          cliStep: `issue a fresh one with \`sitekey-authz key issue ${siteId}\``,
        });
      }
      throw error;
    }
  }

  private async site(sql: pg.ClientBase, siteId: SiteId): Promise<SiteSummary> {
    const { rows } = await sql.query<SiteSummaryRow>(`${SITE_SUMMARY} WHERE s.id = $1`, [siteId]);
    if (rows[0] === undefined) throw siteNotFound(siteId);
    return siteSummary(rows[0]);
  }
}

/** Key ids are global, so an id typed with the wrong site is named with the site it belongs to. */
async function keyNotFound(sql: pg.ClientBase, siteId: SiteId, keyId: KeyId): Promise<AdminError> {
  const { rows } = await sql.query<{ site_id: string }>('SELECT site_id::text FROM api_keys WHERE id = $1', [keyId]);
  const owner = rows[0]?.site_id;
  return new AdminError(
    'KEY_NOT_FOUND',
    owner === undefined
      ? `site ${siteId} has no key with id ${keyId}`
      : `key ${keyId} belongs to site ${owner}, not to site ${siteId}`,
    undefined,
    {
      field: 'keyId',
      step: owner === undefined ? "take the id from the site's list of keys" : `look for it among the keys of site ${owner}`,
      cliStep: `see ${owner === undefined ? 'its keys' : 'it'} with \`sitekey-authz key list ${owner ?? siteId}\``,
    },
  );
}

/** An address inside a listed network stays admitted: the message names the networks to remove instead. */
async function notOnAllowlist(sql: pg.ClientBase, siteId: SiteId, missing: readonly string[]): Promise<AdminError> {
  const absent: string[] = [];
  const inside: string[] = [];
  const holding: string[] = [];
  for (const cidr of missing) {
    const { rows } = await sql.query<{ cidr: string }>(
      'SELECT cidr::text FROM allowlist_entries WHERE site_id = $1 AND cidr >> $2::cidr ORDER BY masklen(cidr) DESC',
      [siteId, cidr],
    );
    const networks = rows.map((row) => row.cidr);
    if (networks.length === 0) absent.push(cidr);
    else {
      holding.push(...networks);
      inside.push(
        `${cidr} is not on the allowlist of site ${siteId}, but it lies inside ${networks.join(' and ')}, ` +
          `which stay${networks.length === 1 ? 's' : ''} and admit${networks.length === 1 ? 's' : ''} it: remove ${networks.length === 1 ? 'that network' : 'those networks'} instead`,
      );
    }
  }
  const reasons = [...(absent.length > 0 ? [`not on the allowlist of site ${siteId}: ${absent.join(', ')}`] : []), ...inside];
  return new AdminError('CIDR_NOT_ON_ALLOWLIST', `${reasons.join('; ')}; nothing was revoked`, undefined, {
    field: 'entries',
    cliStep:
      holding.length === 0
        ? `see the entries with \`sitekey-authz ip list ${siteId}\``
        : `to remove ${holding.length === 1 ? 'the network' : 'those networks'}: sitekey-authz ip revoke ${siteId} ${[...new Set(holding)].join(' ')}`,
  });
}
