import { ERROR_CATALOGUE } from '../decision/error-catalogue.js';
import type { ClientId, ErrorId, SiteAuthMethod, SiteId } from '../decision/types.js';
import type { CredentialAdmin } from '../store/credential-admin.js';
import type { ClientStanding, SiteStanding } from '../store/refusal-facts.js';
import { explainRefusal, siteStandingNotes, type CountedRefusal, type RefusalExplanation } from './refusal-explanations.js';

/** Whose refusals: a site, a token client, or (neither) every site's. */
export interface BlockedPartnerQuery {
  readonly since: Date;
  readonly siteId: SiteId | undefined;
  readonly clientId: ClientId | undefined;
  /** Of the rows with a client address, as `report denials` counts them. */
  readonly limit: number;
  readonly sunsetAt: string;
  readonly audience: string | undefined;
}

/** Why and what next are null only on a report of every site past the first EXPLAINED_SITES_MAX sites. */
interface ExplainedRefusal extends CountedRefusal {
  readonly code: string;
  readonly count: number;
  readonly firstSeen: string;
  readonly reason: string | null;
  readonly nextStep: string | null;
  readonly audit: RefusalExplanation['audit'];
}

export interface BlockedPartnerReport {
  readonly site: { readonly siteId: SiteId; readonly name: string; readonly enabled: boolean; readonly authMethod: SiteAuthMethod } | null;
  readonly client: { readonly clientId: ClientId; readonly siteId: SiteId | null } | null;
  /** What refuses the partner whatever they send (a disabled site, tokens only, an empty allowlist). */
  readonly notes: readonly RefusalExplanation[];
  readonly rows: readonly ExplainedRefusal[];
  readonly omittedRows: number;
}

// A report of every site explains the rows of this many sites; one site's report explains all of its rows.
const EXPLAINED_SITES_MAX = 50;

const codeOf = (errorId: number): string => ERROR_CATALOGUE[errorId as ErrorId]?.code ?? String(errorId);

/** A token's refusal is counted by client, with none of the fields of an address's. */
const BY_CLIENT = { clientIp: null, rehearsal: false, shadow: false, moreAddresses: 0 } as const;

/**
 * "A partner says they are blocked": the refusals of their site (by address) and of their tokens
 * (by client), each with its reason, next step and the audit entries behind it, newest state first.
 */
export async function blockedPartnerReport(admin: CredentialAdmin, query: BlockedPartnerQuery): Promise<BlockedPartnerReport> {
  const client: ClientStanding | undefined = query.clientId === undefined ? undefined : await admin.refusals.clientStanding(query.clientId);
  const siteId = query.siteId ?? client?.siteId ?? undefined;
  const denials =
    query.clientId !== undefined && query.siteId === undefined
      ? { rows: [], omittedRows: 0 }
      : await admin.sunsetReports.denialReport(query.since, siteId, query.limit);
  const tokens =
    query.clientId !== undefined
      ? await admin.refusals.tokenRefusals(query.since, { clientId: query.clientId })
      : siteId !== undefined
        ? await admin.refusals.tokenRefusals(query.since, { siteId })
        : [];
  const standings = new Map<SiteId, SiteStanding | undefined>();
  const standingOf = async (id: SiteId | null): Promise<SiteStanding | undefined | null> => {
    if (id === null) return undefined;
    if (!standings.has(id)) {
      if (standings.size >= EXPLAINED_SITES_MAX) return null;
      standings.set(id, await admin.refusals.siteStanding(id, query.since));
    }
    return standings.get(id);
  };
  const counted: (CountedRefusal & { count: number; firstSeen: string })[] = [
    ...denials.rows.map((row) => ({ ...row, clientId: null, rule: null, signed: null })),
    ...tokens.map((row) => ({ ...row, ...BY_CLIENT })),
  ].sort((a, b) => b.count - a.count);
  const rows: ExplainedRefusal[] = [];
  for (const refusal of counted) {
    const site = await standingOf(refusal.siteId);
    const explanation = site === null ? undefined : explainRefusal(refusal, { site, client, sunsetAt: query.sunsetAt, audience: query.audience });
    rows.push({
      ...refusal,
      code: codeOf(refusal.errorId),
      reason: explanation?.reason ?? null,
      nextStep: explanation?.nextStep ?? null,
      audit: explanation?.audit ?? null,
    });
  }
  const site = siteId === undefined ? undefined : await standingOf(siteId);
  return {
    site: site ? { siteId: site.siteId, name: site.name, enabled: site.enabled, authMethod: site.authMethod } : null,
    client: client === undefined ? null : { clientId: client.clientId, siteId: client.siteId },
    notes: [...(site ? siteStandingNotes(site) : []), ...clientNotes(client, query)],
    rows,
    omittedRows: denials.omittedRows,
  };
}

/** A client looked up by id that is registered nowhere: said even before any of its tokens is refused. */
function clientNotes(client: ClientStanding | undefined, query: BlockedPartnerQuery): RefusalExplanation[] {
  if (client === undefined || client.siteId !== null) return [];
  const named = { errorId: 107, siteId: null, clientId: client.clientId, rule: null, signed: true };
  const refusal: CountedRefusal = { ...BY_CLIENT, ...named, lastSeen: query.since.toISOString() };
  return [explainRefusal(refusal, { site: undefined, client, sunsetAt: query.sunsetAt, audience: query.audience })];
}
