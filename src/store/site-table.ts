import type { Slices } from '../common/slices.js';
import type { Brownout, ClientId, CredentialSnapshot, SiteCredentials, SiteId, SunsetPolicy } from '../decision/types.js';
import { SiteRecords } from './site-records.js';

/**
 * The sites a check reads, replaced whole by a full load, site by site by a resync, or one site at a
 * time by a reload. Loads may finish out of order (a per-site reload does not wait behind a full
 * load), so each write says when its read began and a read older than what is held is dropped: a
 * slow full load never undoes a revocation that a later per-site reload brought in.
 *
 * A check runs to completion without yielding, and sites are replaced, never changed: a check sees
 * each site either before or after a reload, never half of one. A resync is applied in slices, so
 * checks between them see some of its sites and not yet others, each whole, as with per-site reloads.
 */
export class SiteTable implements CredentialSnapshot {
  private sites = new SiteRecords();
  /** Each site's token clients, indexed by client: kept with each write, as checks look clients up. */
  private clientSites = new Map<ClientId, SiteId>();
  private brownoutList: readonly Brownout[] = [];
  private storedSunsetPolicy: SunsetPolicy | undefined;
  private fullLoadStartedAt = -Infinity;
  /** When the read of the brownouts and sunset policy held began: a full load, or a reload of those alone. */
  private brownoutsStartedAt = -Infinity;
  /** Sites reloaded on their own after the last full load started, and when each reload started. */
  private readonly reloadStartedAt = new Map<SiteId, number>();

  site(siteId: SiteId): SiteCredentials | undefined {
    return this.sites.get(siteId);
  }

  /**
   * The site the client is registered to. The index is checked against the site itself, so a client
   * moved between sites whose reloads arrive out of order is never taken for either's.
   */
  siteOfTokenClient(clientId: ClientId): SiteCredentials | undefined {
    const siteId = this.clientSites.get(clientId);
    const site = siteId === undefined ? undefined : this.sites.get(siteId);
    return site?.tokenClients.has(clientId) ? site : undefined;
  }

  /** Brownouts change with a full load, or on their own when a '*' notification (which they send) arrives. */
  get brownouts(): readonly Brownout[] {
    return this.brownoutList;
  }

  /** The sunset policy the database held at the last read of it; undefined: none stored. */
  get sunsetPolicy(): SunsetPolicy | undefined {
    return this.storedSunsetPolicy;
  }

  get size(): number {
    return this.sites.size;
  }

  /** Active keys across all sites. */
  get activeKeys(): number {
    return this.sites.activeKeys;
  }

  /** Every site replaced by `sites` (which the table takes), except those a per-site reload that began after it brought in. */
  replaceAll(sites: SiteRecords, brownouts: readonly Brownout[], startedAt: number, sunsetPolicy?: SunsetPolicy): void {
    if (startedAt <= this.fullLoadStartedAt) return;
    this.replaceBrownouts(brownouts, startedAt, sunsetPolicy);
    for (const siteId of this.newerReloads(startedAt)) {
      if (!sites.copyFrom(this.sites, siteId)) sites.delete(siteId);
    }
    this.sites = sites;
    this.clientSites = new Map();
    for (const siteId of sites.keys()) {
      for (const clientId of sites.tokenClientsOf(siteId).keys()) this.clientSites.set(clientId, siteId);
    }
    this.fullLoadStartedAt = startedAt;
  }

  /**
   * A full resync that read again only the sites whose data changed: `changed` replaces them, `removed`
   * go, every other site keeps its record. Applied in `slices`; like replaceAll, it never undoes a
   * per-site reload that began after it, even one that lands between its slices. False when a newer
   * full load was applied already, and this one was not.
   */
  async applyResync(
    changed: SiteRecords,
    removed: readonly SiteId[],
    brownouts: readonly Brownout[],
    startedAt: number,
    slices: Slices,
    sunsetPolicy?: SunsetPolicy,
  ): Promise<boolean> {
    if (startedAt <= this.fullLoadStartedAt) return false;
    this.replaceBrownouts(brownouts, startedAt, sunsetPolicy);
    // From here on, a per-site reload that began before this resync is older than what it brings.
    this.fullLoadStartedAt = startedAt;
    const isNewer = (siteId: SiteId) => (this.reloadStartedAt.get(siteId) ?? -Infinity) > startedAt;
    for (const siteId of changed.keys()) {
      if (!isNewer(siteId)) this.put(siteId, changed);
      if (slices.over) await slices.next();
    }
    for (const siteId of removed) {
      if (!isNewer(siteId)) this.put(siteId, undefined);
      if (slices.over) await slices.next();
    }
    return true;
  }

  /**
   * The sites a per-site reload brought in that began after `startedAt`: the table holds the reload's
   * read of them. Reloads that began before it are forgotten, as a full load that began at
   * `startedAt` is newer than them.
   */
  newerReloads(startedAt: number): SiteId[] {
    const newer: SiteId[] = [];
    for (const [siteId, reloadedAt] of this.reloadStartedAt) {
      if (reloadedAt <= startedAt) this.reloadStartedAt.delete(siteId);
      else newer.push(siteId);
    }
    return newer;
  }

  /** The brownouts and the sunset policy, read on their own or with a full load. */
  replaceBrownouts(brownouts: readonly Brownout[], startedAt: number, sunsetPolicy?: SunsetPolicy): void {
    if (startedAt <= this.brownoutsStartedAt) return;
    this.brownoutList = brownouts;
    this.storedSunsetPolicy = sunsetPolicy;
    this.brownoutsStartedAt = startedAt;
  }

  /**
   * `loaded` holds the named sites that still exist; a named site missing from it was deleted. Returns
   * the sites it replaced: the others had a newer read already, which stays.
   */
  replaceSites(siteIds: readonly SiteId[], loaded: SiteRecords, startedAt: number): SiteId[] {
    const replaced: SiteId[] = [];
    for (const siteId of siteIds) {
      if (startedAt <= Math.max(this.fullLoadStartedAt, this.reloadStartedAt.get(siteId) ?? -Infinity)) continue;
      this.put(siteId, loaded.has(siteId) ? loaded : undefined);
      this.reloadStartedAt.set(siteId, startedAt);
      replaced.push(siteId);
    }
    return replaced;
  }

  /** One site replaced by the one `source` holds (or removed), with the client index that follows it. */
  private put(siteId: SiteId, source: SiteRecords | undefined): void {
    for (const clientId of this.sites.tokenClientsOf(siteId).keys()) if (this.clientSites.get(clientId) === siteId) this.clientSites.delete(clientId);
    // A site `source` lists but could not write is unknown: none of its requests is allowed.
    if (source === undefined || !this.sites.copyFrom(source, siteId)) {
      this.sites.delete(siteId);
      return;
    }
    for (const clientId of this.sites.tokenClientsOf(siteId).keys()) this.clientSites.set(clientId, siteId);
  }
}
