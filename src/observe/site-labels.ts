import type { SiteId } from '../decision/types.js';
import type { CheckEvent } from './check-event.js';

/** The `site` label value of every site beyond the cap, every unknown id, and checks without a site. */
export const OTHER_SITE = 'other';

/**
 * Only an allowed check, which only the site's credentials bring, earns a site its label, at most `max`, first come
 * first served: nothing a client wrote becomes a label, so no request can add a series.
 */
export class SiteLabels {
  private readonly labelled = new Set<SiteId>();
  constructor(private readonly max: number) {}

  of(event: CheckEvent): string {
    const { siteId } = event;
    if (siteId === undefined || !event.siteKnown) return OTHER_SITE;
    if (this.labelled.has(siteId)) return siteId;
    if (event.outcome !== 'allowed' || this.labelled.size >= this.max) return OTHER_SITE;
    this.labelled.add(siteId);
    return siteId;
  }
}
