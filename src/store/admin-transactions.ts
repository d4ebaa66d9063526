import { UNDEFINED_TABLE } from './database.js';
import { withPooledClient } from './pooled-client.js';
import type pg from 'pg';
import type { ClientId, SiteId } from '../decision/types.js';
import { ACTOR_COLUMNS, actorValues, type AuditActor } from './audit-actor.js';

/** Why an administrative change was refused; the message says in words what to do instead. */
export type AdminErrorCode =
  | 'SITE_EXISTS'
  | 'SITE_NOT_FOUND'
  | 'KEY_NOT_FOUND'
  | 'KEY_DUPLICATE'
  | 'KEY_NOT_ACTIVE'
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

/** What to do next with a token client, which each transport words its own way: a command, a request, a button. */
export interface AdminNextStep {
  /** Remove this client here only, leaving it at the issuer; before that, create one for this site there. */
  readonly removeHereOnly: ClientId;
  readonly createClientFor?: SiteId;
}

interface AdminErrorDetail {
  /** The body field or argument it concerns, e.g. `id` for a site that exists. */
  readonly field?: string;
  /** What to do next, in words (the API and the console). */
  readonly step?: string;
  /** What to type next at the CLI, instead of `step`. */
  readonly cliStep?: string;
}

export class AdminError extends Error {
  readonly field: string | undefined;
  readonly step: string | undefined;
  readonly cliStep: string | undefined;

  constructor(
    readonly code: AdminErrorCode,
    /** In words for every reader: no command line, no flag. */
    message: string,
    /** Said after the message, in the words of the transport that reports it. */
    readonly nextStep?: AdminNextStep,
    detail: AdminErrorDetail = {},
  ) {
    super(message);
    this.name = 'AdminError';
    this.field = detail.field;
    this.step = detail.step;
    this.cliStep = detail.cliStep;
  }
}

export type AdminTransport = 'cli' | 'api' | 'console';

/** The message with its next step: what to type (CLI), to send (API) or to press (console). */
export function adminErrorText(error: AdminError, transport: AdminTransport): string {
  const step = error.nextStep;
  if (step === undefined) {
    const next = transport === 'cli' ? (error.cliStep ?? error.step) : error.step;
    return next === undefined ? error.message : `${error.message}; ${next}`;
  }
  const id = step.removeHereOnly;
  const remove = {
    cli: `remove this one here only: \`sitekey-authz token-client remove ${id} --local-only\``,
    api: `remove this one here only: DELETE /api/v1/token-clients/${encodeURIComponent(id)}?localOnly=true`,
    console: `remove this one here only: Remove, then Remove here only, in client ${id}'s row`,
  }[transport];
  if (step.createClientFor === undefined) return `${error.message}: ${remove}`;
  const site = step.createClientFor;
  const create = {
    cli: `create a new client for the site (\`sitekey-authz token-client create ${site}\`)`,
    api: `create a new client for the site (POST /api/v1/sites/${encodeURIComponent(site)}/token-clients/create)`,
    console: 'create a new client for the site with Create client below',
  }[transport];
  return `${error.message}: ${create}, then ${remove}`;
}

/** `field`: where the request named the site (siteId in a path, sites in a brownout's list). */
export const siteNotFound = (siteId: SiteId, field = 'siteId'): AdminError =>
  new AdminError('SITE_NOT_FOUND', `site ${siteId} does not exist`, undefined, {
    field,
    step: 'check the id among the sites, or add the site first',
    cliStep: `add it with \`sitekey-authz site add ${siteId}\`, or see \`sitekey-authz site list\``,
  });

/** The site's `columns`, its row locked so that concurrent account managers cannot interleave. */
export async function lockSite<Row extends pg.QueryResultRow>(sql: pg.ClientBase, siteId: SiteId, columns = '1') {
  const { rows } = await sql.query<Row>(`SELECT ${columns} FROM sites WHERE id = $1 FOR UPDATE`, [siteId]);
  if (rows[0] === undefined) throw siteNotFound(siteId);
  return rows[0];
}

/** As siteNotFound of the first id that does not exist. */
export async function refuseUnknownSites(sql: pg.ClientBase, siteIds: readonly SiteId[], field: string): Promise<void> {
  const { rows } = await sql.query<{ id: string }>('SELECT id::text FROM sites WHERE id = ANY($1::bigint[])', [siteIds]);
  const known = new Set(rows.map((row) => row.id));
  const unknown = siteIds.find((siteId) => !known.has(siteId));
  if (unknown !== undefined) throw siteNotFound(unknown, field);
}

function schemaHint(error: unknown): unknown {
  if ((error as { code?: string }).code !== UNDEFINED_TABLE) return error;
  return new AdminError('SCHEMA_MISSING', 'the database has no sitekey-authz tables yet', undefined, { step: 'an operator must apply the migrations', cliStep: 'create them with `sitekey-authz migrate`' });
}

/** How every administrative command reads, and changes in one transaction with its audit row. */
export class AdminTransactions {
  constructor(
    private readonly pool: pg.Pool,
    /** Who makes the changes; undefined for a request of no one, which may read but never change. */
    private readonly actor: AuditActor | undefined,
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
    if (this.actor === undefined) throw new Error(`${action} was asked by no one, and is not made: a change needs an actor for the audit trail`);
    await sql.query(`INSERT INTO audit_log (${ACTOR_COLUMNS}, action, site_id, details) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
      ...actorValues(this.actor),
      action,
      siteId,
      JSON.stringify(details),
    ]);
  }
}
