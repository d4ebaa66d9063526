import type { SiteId, SunsetPolicy } from '../decision/types.js';
import { AdminError, refuseUnknownSites, lockSite, type AdminTransactions } from './admin-transactions.js';
import { loadSunsetPolicy, writeSunsetPolicy } from './sunset-policy.js';
import { instantText, optionalInstantText, type StoredTimestamp } from './timestamps.js';

export interface SunsetPolicySummary {
  readonly sunsetAt: string;
  readonly enforce: boolean;
  readonly guideUrl: string | null;
  /** database: what every process follows; environment: none stored yet, this process's environment applies until serve seeds it. */
  readonly source: 'database' | 'environment';
  readonly updatedAt: string | null;
}

/** An absent field keeps its value. */
export interface SunsetPolicyChange {
  readonly sunsetAt?: number;
  readonly enforce?: boolean;
  /** null: no guide any more. */
  readonly guideUrl?: string | null;
}

function policySummary(policy: SunsetPolicy, source: SunsetPolicySummary['source'], updatedAt: string | null): SunsetPolicySummary {
  return { sunsetAt: new Date(policy.sunsetAt).toISOString(), enforce: policy.enforce, guideUrl: policy.guideUrl ?? null, source, updatedAt };
}

export interface BrownoutSummary {
  readonly brownoutId: string;
  readonly from: string;
  readonly until: string;
  /** null: every site. */
  readonly siteIds: string[] | null;
  readonly dryRun: boolean;
  readonly note: string;
  readonly createdAt: string;
  readonly cancelledAt: string | null;
  readonly state: 'scheduled' | 'running' | 'over' | 'cancelled';
}

export interface NewBrownout {
  readonly from: Date;
  readonly until: Date;
  readonly siteIds: readonly SiteId[] | null;
  readonly dryRun: boolean;
  readonly note: string;
}

interface BrownoutRow {
  id: string;
  starts_at: StoredTimestamp;
  ends_at: StoredTimestamp;
  site_ids: string[] | null;
  dry_run: boolean;
  note: string;
  created_at: StoredTimestamp;
  cancelled_at: StoredTimestamp | null;
  state: BrownoutSummary['state'];
}

const BROWNOUT_COLUMNS = `id::text, starts_at, ends_at, site_ids::text[] AS site_ids, dry_run, note, created_at, cancelled_at,
  CASE WHEN cancelled_at IS NOT NULL THEN 'cancelled' WHEN ends_at <= now() THEN 'over'
       WHEN starts_at <= now() THEN 'running' ELSE 'scheduled' END AS state`;

function brownoutSummary(row: BrownoutRow): BrownoutSummary {
  return {
    brownoutId: row.id,
    from: instantText(row.starts_at),
    until: instantText(row.ends_at),
    siteIds: row.site_ids,
    dryRun: row.dry_run,
    note: row.note,
    createdAt: instantText(row.created_at),
    cancelledAt: optionalInstantText(row.cancelled_at),
    state: row.state,
  };
}

/** The API-key sunset as account managers run it: the policy, per-site grace and brownouts. */
export class SunsetAdmin {
  constructor(private readonly transactions: AdminTransactions) {}

  /** The database's, or `fallback` (the environment's) while it holds none. */
  async policy(fallback: SunsetPolicy): Promise<SunsetPolicySummary> {
    return this.transactions.read(async (sql) => {
      const stored = await loadSunsetPolicy(sql);
      return stored === undefined ? policySummary(fallback, 'environment', null) : policySummary(stored, 'database', stored.updatedAt);
    });
  }

  /** Starting from `fallback` when none is stored. */
  async setPolicy(change: SunsetPolicyChange, fallback: SunsetPolicy): Promise<{ readonly policy: SunsetPolicySummary; readonly previous: SunsetPolicySummary }> {
    return this.transactions.change(async (sql) => {
      const stored = await loadSunsetPolicy(sql, true);
      const before = stored ?? fallback;
      const after: SunsetPolicy = {
        sunsetAt: change.sunsetAt ?? before.sunsetAt,
        enforce: change.enforce ?? before.enforce,
        guideUrl: change.guideUrl === undefined ? before.guideUrl : (change.guideUrl ?? undefined),
      };
      await writeSunsetPolicy(sql, after);
      const written = await loadSunsetPolicy(sql);
      const policy = policySummary(after, 'database', written?.updatedAt ?? null);
      const previous = policySummary(before, stored === undefined ? 'environment' : 'database', stored?.updatedAt ?? null);
      await this.transactions.audit(sql, 'sunset.set', null, { policy, previous });
      return { policy, previous };
    });
  }

  /** null clears it. */
  async setGrace(siteId: SiteId, until: Date | null): Promise<{ readonly siteId: SiteId; readonly graceUntil: string | null; readonly previous: string | null }> {
    return this.transactions.change(async (sql) => {
      const row = await lockSite<{ previous: StoredTimestamp | null }>(sql, siteId, 'apikey_grace_until AS previous');
      await sql.query('UPDATE sites SET apikey_grace_until = $2, updated_at = now() WHERE id = $1', [siteId, until]);
      const graceUntil = until?.toISOString() ?? null;
      const previous = optionalInstantText(row.previous);
      await this.transactions.audit(sql, until ? 'site.grace' : 'site.grace.clear', siteId, { graceUntil, previous });
      return { siteId, graceUntil, previous };
    });
  }

  async addBrownout(brownout: NewBrownout): Promise<BrownoutSummary> {
    return this.transactions.change(async (sql) => {
      if (brownout.siteIds !== null) await refuseUnknownSites(sql, brownout.siteIds, 'sites');
      const { rows } = await sql.query<BrownoutRow>(
        `INSERT INTO brownouts (starts_at, ends_at, site_ids, dry_run, note) VALUES ($1, $2, $3, $4, $5) RETURNING ${BROWNOUT_COLUMNS}`,
        [brownout.from, brownout.until, brownout.siteIds, brownout.dryRun, brownout.note],
      );
      const added = brownoutSummary(rows[0] as BrownoutRow);
      await this.transactions.audit(sql, 'brownout.add', null, { ...added });
      return added;
    });
  }

  async listBrownouts(): Promise<BrownoutSummary[]> {
    return this.transactions.read(async (sql) =>
      (await sql.query<BrownoutRow>(`SELECT ${BROWNOUT_COLUMNS} FROM brownouts ORDER BY starts_at, id`)).rows.map(brownoutSummary),
    );
  }

  async cancelBrownout(brownoutId: string): Promise<{ readonly brownout: BrownoutSummary; readonly changed: boolean }> {
    return this.transactions.change(async (sql) => {
      const found = await sql.query<BrownoutRow & { cancelled: boolean }>(`SELECT ${BROWNOUT_COLUMNS}, cancelled_at IS NOT NULL AS cancelled FROM brownouts WHERE id = $1 FOR UPDATE`, [brownoutId]);
      if (found.rows[0] === undefined) {
        throw new AdminError('BROWNOUT_NOT_FOUND', `brownout ${brownoutId} does not exist`, undefined, {
          field: 'brownoutId',
          step: 'take its id from the list of brownouts',
          cliStep: 'see the ids with `sitekey-authz brownout list`',
        });
      }
      const changed = !found.rows[0].cancelled;
      if (changed) {
        await sql.query('UPDATE brownouts SET cancelled_at = now() WHERE id = $1', [brownoutId]);
        await this.transactions.audit(sql, 'brownout.cancel', null, { brownoutId, before: { state: found.rows[0].state }, after: { state: 'cancelled' } });
      }
      const { rows } = await sql.query<BrownoutRow>(`SELECT ${BROWNOUT_COLUMNS} FROM brownouts WHERE id = $1`, [brownoutId]);
      return { brownout: brownoutSummary(rows[0] as BrownoutRow), changed };
    });
  }
}
