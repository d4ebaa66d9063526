import type { Brownout, SiteCredentials, SunsetPolicy, SunsetReason } from './types.js';

type SunsetRefusal =
  | { readonly kind: 'refuse'; readonly denial: { readonly reason: SunsetReason; readonly brownout?: { readonly id: string; readonly until: number } } }
  | { readonly kind: 'rehearse'; readonly brownoutId: string };

function covers(brownout: Brownout, site: SiteCredentials, now: number): boolean {
  return now >= brownout.from && now < brownout.until && (brownout.siteIds === null || brownout.siteIds.has(site.siteId));
}

/** After an enforced sunset or in a brownout, never in grace; a dry-run brownout refuses nobody, only reports. */
export function sunsetRefusal(site: SiteCredentials, brownouts: readonly Brownout[], policy: SunsetPolicy, now: number): SunsetRefusal | undefined {
  if (site.graceUntil !== null && now < site.graceUntil) return undefined;
  if (policy.enforce && now >= policy.sunsetAt) return { kind: 'refuse', denial: { reason: 'retired' } };
  let rehearsal: Brownout | undefined;
  for (const brownout of brownouts) {
    if (!covers(brownout, site, now)) continue;
    if (!brownout.dryRun) return { kind: 'refuse', denial: { reason: 'brownout', brownout: { id: brownout.id, until: brownout.until } } };
    rehearsal ??= brownout;
  }
  return rehearsal && { kind: 'rehearse', brownoutId: rehearsal.id };
}
