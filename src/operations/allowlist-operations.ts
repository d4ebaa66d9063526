import { coversIpv4Mapped, parseAllowlistEntry, type AllowlistEntry } from '../allowlist/allowlist-entry.js';
import { IPV4_MAPPED } from '../allowlist/client-ip.js';
import type { SiteId } from '../decision/types.js';
import { refuse, siteIdOf } from './fields.js';
import type { Changed, OperationContext } from './operation-context.js';

export const noAllowlistWarning = (siteId: SiteId) => `site ${siteId} has no allowlist entry yet: every request is refused (103) until an address is allowed`;

export function allowlistEntriesOf(texts: readonly string[], field = 'entries'): AllowlistEntry[] {
  if (texts.length === 0) throw refuse('ENTRIES_EMPTY', field, 'none given: give at least one address or network', '203.0.113.0/24');
  const parsed = texts.map(parseAllowlistEntry);
  const reasons = parsed.flatMap((result) => (result.ok ? [] : [result.reason]));
  if (reasons.length > 0) throw refuse('ENTRY_INVALID', field, `${reasons.join('; ')} (nothing was changed)`);
  const entries = parsed.flatMap((result) => (result.ok ? [result.entry] : []));
  return [...new Map(entries.map((entry) => [entry.cidr, entry])).values()];
}

const admitsEveryone = (entry: AllowlistEntry) => entry.prefix === 0;
// Registries hand out /8 and /16 at most; wider is no partner's (0.0.0.0/1 and 128.0.0.0/1 admit everyone together).
const WIDEST_PARTNER_PREFIX = { ipv4: 8, ipv6: 16 } as const;
const admitsTooMany = (entry: AllowlistEntry) => entry.prefix < (entry.cidr.includes(':') ? WIDEST_PARTNER_PREFIX.ipv6 : WIDEST_PARTNER_PREFIX.ipv4);

export interface AllowRequest {
  readonly siteId: string | undefined;
  readonly entries: readonly string[];
  /** The second step for 0.0.0.0/0, ::/0 and networks nearly as wide: the person said they mean them. */
  readonly allowAnyAddress: boolean;
}

export async function allowNetworks({ admin }: OperationContext, request: AllowRequest): Promise<Changed<{ siteId: SiteId; added: string[]; alreadyAllowed: string[] }>> {
  const siteId = siteIdOf(request.siteId);
  const entries = allowlistEntriesOf(request.entries);
  const everyone = entries.filter(admitsEveryone).map(({ cidr }) => cidr);
  const tooMany = entries.filter((entry) => admitsTooMany(entry) && !admitsEveryone(entry)).map(({ cidr }) => cidr);
  if (everyone.length + tooMany.length > 0 && !request.allowAnyAddress) {
    const what = [
      ...(everyone.length > 0 ? [`${everyone.join(' and ')} would admit every address on the internet`] : []),
      ...(tooMany.length > 0 ? [`${tooMany.join(' and ')} would admit a large part of the internet, wider than any partner's network`] : []),
    ].join(', and ');
    throw refuse(
      'ANY_ADDRESS_UNCONFIRMED',
      'entries',
      `${what}, and the allowlist would no longer restrict site ${siteId}; ` +
        "nothing was changed. If every address is what you mean, confirm it as a second step (allow any address); otherwise give the partner's own networks",
      '203.0.113.0/24',
      'allowAnyAddress',
    );
  }
  const result = await admin.allowNetworks(siteId, entries);
  const warnings = [
    ...everyone.map((cidr) => `${cidr} admits every ${cidr.includes(':') ? 'IPv6' : 'IPv4'} address: the allowlist no longer restricts site ${siteId}`),
    ...tooMany.map((cidr) => `${cidr} admits a large part of the internet: the allowlist hardly restricts site ${siteId}`),
    ...entries.filter(coversIpv4Mapped).map(
      ({ cidr }) =>
        `${cidr} does not admit IPv4 clients, although it covers their IPv4-mapped form ${IPV4_MAPPED.network}/${IPV4_MAPPED.prefix}: IPv4 clients match IPv4 entries only. ` +
        'To admit them, add an IPv4 network too, e.g. 203.0.113.0/24',
    ),
  ];
  return { result: { siteId, ...result }, warnings };
}

export async function revokeNetworks({ admin }: OperationContext, request: { siteId: string | undefined; entries: readonly string[]; field?: string }): Promise<Changed<{ siteId: SiteId; removed: string[] }>> {
  const siteId = siteIdOf(request.siteId);
  const entries = allowlistEntriesOf(request.entries, request.field);
  const { removed } = await admin.revokeNetworks(siteId, entries);
  const remaining = await admin.listNetworks(siteId);
  return { result: { siteId, removed }, warnings: remaining.length === 0 ? [noAllowlistWarning(siteId)] : [] };
}
