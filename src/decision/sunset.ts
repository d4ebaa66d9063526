import type { Brownout, SiteCredentials, SunsetPolicy, SunsetReason } from './types.js';

export type SunsetRefusal =
  | { readonly kind: 'refuse'; readonly denial: { readonly reason: SunsetReason; readonly brownout?: { readonly id: string; readonly until: number } } }
  | { readonly kind: 'rehearse'; readonly brownoutId: string };

function covers(brownout: Brownout, site: SiteCredentials, now: number): boolean {
  return now >= brownout.from && now < brownout.until && (brownout.siteIds === null || brownout.siteIds.has(site.siteId));
}

/**
 * Whether API-key authentication is refused to a site whose credentials are otherwise valid: after
 * the sunset when enforcement is on, or during a brownout; never while the site's grace
 * lasts. A dry-run brownout refuses nobody but is reported, so its effect can be measured first.
 */
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
