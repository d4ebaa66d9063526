import type { Slices } from '../common/slices.js';
import type { Brownout, ClientId, CredentialSnapshot, SiteCredentials, SiteId, SunsetPolicy } from '../decision/types.js';
import { SiteRecords } from './site-records.js';

/**
 * Loads may finish out of order: a read older than what is held is dropped, so a slow full load never undoes a
 * revocation a later reload brought in. Sites are replaced, never changed: a check never sees half of one.
 */
export class SiteTable implements CredentialSnapshot {
  private sites = new SiteRecords();
  private clientSites = new Map<ClientId, SiteId>();
  private brownoutList: readonly Brownout[] = [];
  private storedSunsetPolicy: SunsetPolicy | undefined;
  private fullLoadStartedAt = -Infinity;
  /** By a full load, or a reload of the brownouts and sunset policy alone. */
  private brownoutsStartedAt = -Infinity;
  /** Sites reloaded on their own after the last full load started. */
  private readonly reloadStartedAt = new Map<SiteId, number>();

  site(siteId: SiteId): SiteCredentials | undefined {
    return this.sites.get(siteId);
  }

  /** Checked against the site itself: a client moved between sites whose reloads arrive out of order is neither's. */
  siteOfTokenClient(clientId: ClientId): SiteCredentials | undefined {
    const siteId = this.clientSites.get(clientId);
    const site = siteId === undefined ? undefined : this.sites.get(siteId);
    return site?.tokenClients.has(clientId) ? site : undefined;
  }

  get brownouts(): readonly Brownout[] {
    return this.brownoutList;
  }

  get sunsetPolicy(): SunsetPolicy | undefined {
    return this.storedSunsetPolicy;
  }

  get size(): number {
    return this.sites.size;
  }

  get activeKeys(): number {
    return this.sites.activeKeys;
  }

  /** Every site replaced by `sites` (which the table takes), except those of a per-site reload that began later. */
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

  /** Like replaceAll, never undoes a reload that began later, even between its slices. False: a newer load won. */
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

  /** The sites of per-site reloads that began after `startedAt`; those that began before are forgotten. */
  newerReloads(startedAt: number): SiteId[] {
    const newer: SiteId[] = [];
    for (const [siteId, reloadedAt] of this.reloadStartedAt) {
      if (reloadedAt <= startedAt) this.reloadStartedAt.delete(siteId);
      else newer.push(siteId);
    }
    return newer;
  }

  replaceBrownouts(brownouts: readonly Brownout[], startedAt: number, sunsetPolicy?: SunsetPolicy): void {
    if (startedAt <= this.brownoutsStartedAt) return;
    this.brownoutList = brownouts;
    this.storedSunsetPolicy = sunsetPolicy;
    this.brownoutsStartedAt = startedAt;
  }

  /** A named site missing from `loaded` was deleted. Returns those replaced: the others had a newer read. */
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
