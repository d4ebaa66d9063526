import type { ClientId, SiteAuthMethod, SiteId } from '../decision/types.js';
import { maskApiKey } from '../decision/api-key.js';
import type { AdminTransactions } from './admin-transactions.js';
import { recordedActor, recordedActorColumns, type RecordedActor, type RecordedActorRow } from './audit-actor.js';
import { NO_SITE } from './token-refusal-recorder.js';
import { instantText, optionalInstantText, type StoredTimestamp } from './timestamps.js';
import type pg from 'pg';

export interface AuditMention extends RecordedActor {
  readonly id: string;
  readonly at: string;
  readonly action: string;
}

/** Revoked (by whom, when the trail says) or expired. */
interface EndedKey {
  readonly keyId: string;
  readonly maskedKey: string;
  readonly revokedAt: string | null;
  readonly expiresAt: string | null;
  readonly revocation: AuditMention | undefined;
}

interface BrownoutSpan {
  readonly brownoutId: string;
  readonly from: string;
  readonly until: string;
  readonly dryRun: boolean;
}

/** What a site is now, and the changes that made it so. */
export interface SiteStanding {
  readonly siteId: SiteId;
  readonly name: string;
  readonly enabled: boolean;
  readonly authMethod: SiteAuthMethod;
  readonly allowlist: readonly string[];
  readonly graceUntil: string | null;
  readonly tokensNotBefore: string | null;
  readonly clients: readonly ClientId[];
  /** The newest audit entry of each action on the site (site.disable, site.auth, ip.revoke, …). */
  readonly latest: Readonly<Record<string, AuditMention>>;
  /** The most recently ended first. */
  readonly endedKeys: readonly EndedKey[];
  /** Of the site (or of every site) that overlap the window, newest first. */
  readonly brownouts: readonly BrownoutSpan[];
}

export interface ClientStanding {
  readonly clientId: ClientId;
  readonly siteId: SiteId | null;
  readonly removal: (AuditMention & { readonly siteId: SiteId | null }) | undefined;
}

interface TokenRefusalRow {
  /** null: the client is registered to no site. */
  readonly siteId: SiteId | null;
  readonly clientId: ClientId;
  readonly errorId: 106 | 107;
  /** null for a 107. */
  readonly rule: string | null;
  readonly signed: boolean;
  readonly count: number;
  readonly firstSeen: string;
  readonly lastSeen: string;
}

// Keys that ended long ago are no longer what a partner stumbles on; the newest few say enough.
const ENDED_KEYS_SHOWN = 5;
const ALLOWLIST_SHOWN = 20;

type MentionRow = RecordedActorRow & { id: string; at: StoredTimestamp; action: string };
const mention = (row: MentionRow): AuditMention => ({ id: row.id, at: instantText(row.at), ...recordedActor(row), action: row.action });

export class RefusalFacts {
  constructor(private readonly transactions: AdminTransactions) {}

  async siteStanding(siteId: SiteId, since: Date): Promise<SiteStanding | undefined> {
    return this.transactions.read(async (sql) => {
      const { rows } = await sql.query<{
        name: string;
        enabled: boolean;
        auth_method: SiteAuthMethod;
        apikey_grace_until: StoredTimestamp | null;
        tokens_not_before: StoredTimestamp | null;
        allowlist: string[];
        clients: string[];
      }>(
        `SELECT s.name, s.enabled, s.auth_method, s.apikey_grace_until, s.tokens_not_before,
                ARRAY(SELECT cidr::text FROM allowlist_entries a WHERE a.site_id = s.id ORDER BY a.cidr LIMIT ${ALLOWLIST_SHOWN + 1}) AS allowlist,
                ARRAY(SELECT client_id FROM token_clients c WHERE c.site_id = s.id ORDER BY c.client_id) AS clients
           FROM sites s WHERE s.id = $1`,
        [siteId],
      );
      const site = rows[0];
      if (site === undefined) return undefined;
      return {
        siteId,
        name: site.name,
        enabled: site.enabled,
        authMethod: site.auth_method,
        allowlist: site.allowlist,
        graceUntil: optionalInstantText(site.apikey_grace_until),
        tokensNotBefore: optionalInstantText(site.tokens_not_before),
        clients: site.clients,
        latest: await latestChanges(sql, siteId),
        endedKeys: await endedKeys(sql, siteId),
        brownouts: await brownoutsOf(sql, siteId, since),
      };
    });
  }

  async clientStanding(clientId: ClientId): Promise<ClientStanding> {
    return this.transactions.read(async (sql) => {
      const registered = await sql.query<{ site_id: string }>('SELECT site_id::text FROM token_clients WHERE client_id = $1', [clientId]);
      const removed = await sql.query<MentionRow & { site_id: string | null }>(
        `SELECT a.id::text, a.at, ${recordedActorColumns('a')}, a.action, a.site_id::text FROM audit_log a
          WHERE action = 'token-client.remove' AND details->>'clientId' = $1 ORDER BY at DESC, id DESC LIMIT 1`,
        [clientId],
      );
      const removal = removed.rows[0];
      return { clientId, siteId: registered.rows[0]?.site_id ?? null, removal: removal && { ...mention(removal), siteId: removal.site_id } };
    });
  }

  /** Of a site's clients, or of one client wherever it is counted. */
  async tokenRefusals(since: Date, of: { readonly siteId: SiteId } | { readonly clientId: ClientId }): Promise<TokenRefusalRow[]> {
    return this.transactions.read(async (sql) => {
      const { rows } = await sql.query<{
        site_id: string;
        client_id: string;
        error_id: 106 | 107;
        rule: string;
        signed: boolean;
        count: string;
        first_seen: StoredTimestamp;
        last_seen: StoredTimestamp;
      }>(
        `SELECT site_id::text, client_id, error_id, rule, signed, sum(count)::text AS count, min(first_seen) AS first_seen, max(last_seen) AS last_seen
           FROM token_refusal_stats
          WHERE last_seen >= $1 AND ($2::bigint IS NULL OR site_id = $2) AND ($3::text IS NULL OR client_id = $3)
          GROUP BY site_id, client_id, error_id, rule, signed
          ORDER BY sum(count) DESC, client_id, error_id, rule LIMIT 200`,
        [since, 'siteId' in of ? of.siteId : null, 'clientId' in of ? of.clientId : null],
      );
      return rows.map((row) => ({
        siteId: row.site_id === NO_SITE ? null : row.site_id,
        clientId: row.client_id,
        errorId: row.error_id,
        rule: row.rule === '' ? null : row.rule,
        signed: row.signed,
        count: Number(row.count),
        firstSeen: instantText(row.first_seen),
        lastSeen: instantText(row.last_seen),
      }));
    });
  }
}

async function latestChanges(sql: pg.ClientBase, siteId: SiteId): Promise<Record<string, AuditMention>> {
  const { rows } = await sql.query<MentionRow>(
    `SELECT DISTINCT ON (action) a.id::text, a.at, ${recordedActorColumns('a')}, a.action FROM audit_log a WHERE site_id = $1 ORDER BY action, at DESC, id DESC`,
    [siteId],
  );
  return Object.fromEntries(rows.map((row) => [row.action, mention(row)]));
}

async function endedKeys(sql: pg.ClientBase, siteId: SiteId): Promise<EndedKey[]> {
  const { rows } = await sql.query<{
    id: string;
    last_five: string;
    revoked_at: StoredTimestamp | null;
    expires_at: StoredTimestamp | null;
    audit_id: string | null;
    audit_at: StoredTimestamp | null;
    actor: string | null;
  } & Omit<RecordedActorRow, 'actor'>>(
    `SELECT k.id::text, k.last_five, k.revoked_at, k.expires_at, r.id::text AS audit_id, r.at AS audit_at, ${recordedActorColumns('r')}
       FROM api_keys k
       LEFT JOIN LATERAL (SELECT id, at, actor, actor_kind, actor_subject, actor_email FROM audit_log
                           WHERE site_id = k.site_id AND action = 'key.revoke' AND details->>'keyId' = k.id::text
                           ORDER BY at DESC LIMIT 1) r ON k.revoked_at IS NOT NULL
      WHERE k.site_id = $1 AND (k.revoked_at IS NOT NULL OR k.expires_at <= now())
      ORDER BY coalesce(k.revoked_at, k.expires_at) DESC LIMIT ${ENDED_KEYS_SHOWN}`,
    [siteId],
  );
  return rows.map((row) => ({
    keyId: row.id,
    maskedKey: maskApiKey(row.last_five),
    revokedAt: optionalInstantText(row.revoked_at),
    expiresAt: optionalInstantText(row.expires_at),
    revocation:
      row.audit_id === null || row.audit_at === null
        ? undefined
        : { id: row.audit_id, at: instantText(row.audit_at), ...recordedActor({ ...row, actor: row.actor ?? '' }), action: 'key.revoke' },
  }));
}

async function brownoutsOf(sql: pg.ClientBase, siteId: SiteId, since: Date): Promise<BrownoutSpan[]> {
  const { rows } = await sql.query<{ id: string; starts_at: StoredTimestamp; ends_at: StoredTimestamp; dry_run: boolean }>(
    `SELECT id::text, starts_at, ends_at, dry_run FROM brownouts
      WHERE cancelled_at IS NULL AND ends_at >= $2 AND starts_at <= now() AND (site_ids IS NULL OR $1 = ANY (site_ids))
      ORDER BY starts_at DESC LIMIT 10`,
    [siteId, since],
  );
  return rows.map((row) => ({ brownoutId: row.id, from: instantText(row.starts_at), until: instantText(row.ends_at), dryRun: row.dry_run }));
}
