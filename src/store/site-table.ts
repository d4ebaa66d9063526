import type { Brownout, ClientId, CredentialSnapshot, SiteCredentials, SiteId, SunsetPolicy } from '../decision/types.js';

/**
 * The sites a check reads, replaced whole by a full load, site by site by a resync, or one site at a
 * time by a reload. Loads may finish out of order (a per-site reload does not wait behind a full
 * load), so each write says when its read began and a read older than what is held is dropped: a
 * slow full load never undoes a revocation that a later per-site reload brought in.
 *
 * A check runs to completion without yielding, and entries are replaced, never changed: a check sees
 * each site either before or after a reload, never half of one.
 */
export class SiteTable implements CredentialSnapshot {
  private sites = new Map<SiteId, SiteCredentials>();
  /** Each site's token clients, indexed by client: kept with each write, as checks look clients up. */
  private clientSites = new Map<ClientId, SiteId>();
  private brownoutList: readonly Brownout[] = [];
  private storedSunsetPolicy: SunsetPolicy | undefined;
  /** Keys across all sites, kept with each write: readiness reads it every second. */
  private keyCount = 0;
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
    return this.keyCount;
  }

  replaceAll(loaded: Map<SiteId, SiteCredentials>, brownouts: readonly Brownout[], startedAt: number, sunsetPolicy?: SunsetPolicy): void {
    if (startedAt <= this.fullLoadStartedAt) return;
    this.replaceBrownouts(brownouts, startedAt, sunsetPolicy);
    for (const [siteId, reloadedAt] of this.reloadStartedAt) {
      if (reloadedAt <= startedAt) {
        this.reloadStartedAt.delete(siteId);
        continue;
      }
      const newer = this.sites.get(siteId);
      if (newer) loaded.set(siteId, newer);
      else loaded.delete(siteId);
    }
    this.sites = loaded;
    this.keyCount = 0;
    this.clientSites = new Map();
    for (const site of loaded.values()) {
      this.keyCount += site.keysByHash.size;
      for (const clientId of site.tokenClients) this.clientSites.set(clientId, site.siteId);
    }
    this.fullLoadStartedAt = startedAt;
  }

  /**
   * A full resync that read again only the sites whose data changed: `changed` replaces them, `removed`
   * go, every other site keeps its object. Like replaceAll, it never undoes a per-site reload that
   * began after it; it returns those sites, whose digest the resync did not see.
   */
  applyResync(
    changed: ReadonlyMap<SiteId, SiteCredentials>,
    removed: readonly SiteId[],
    brownouts: readonly Brownout[],
    startedAt: number,
    sunsetPolicy?: SunsetPolicy,
  ): SiteId[] {
    if (startedAt <= this.fullLoadStartedAt) return [...changed.keys(), ...removed];
    this.replaceBrownouts(brownouts, startedAt, sunsetPolicy);
    const newer = new Set<SiteId>();
    for (const [siteId, reloadedAt] of this.reloadStartedAt) {
      if (reloadedAt <= startedAt) this.reloadStartedAt.delete(siteId);
      else newer.add(siteId);
    }
    for (const [siteId, site] of changed) if (!newer.has(siteId)) this.put(siteId, site);
    for (const siteId of removed) if (!newer.has(siteId)) this.put(siteId, undefined);
    this.fullLoadStartedAt = startedAt;
    return [...newer];
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
  replaceSites(siteIds: readonly SiteId[], loaded: ReadonlyMap<SiteId, SiteCredentials>, startedAt: number): SiteId[] {
    const replaced: SiteId[] = [];
    for (const siteId of siteIds) {
      if (startedAt <= Math.max(this.fullLoadStartedAt, this.reloadStartedAt.get(siteId) ?? -Infinity)) continue;
      this.put(siteId, loaded.get(siteId));
      this.reloadStartedAt.set(siteId, startedAt);
      replaced.push(siteId);
    }
    return replaced;
  }

  /** One site replaced (or removed), with the key count and the client index that follow it. */
  private put(siteId: SiteId, site: SiteCredentials | undefined): void {
    const held = this.sites.get(siteId);
    this.keyCount += (site?.keysByHash.size ?? 0) - (held?.keysByHash.size ?? 0);
    for (const clientId of held?.tokenClients ?? []) if (this.clientSites.get(clientId) === siteId) this.clientSites.delete(clientId);
    for (const clientId of site?.tokenClients ?? []) this.clientSites.set(clientId, siteId);
    if (site) this.sites.set(siteId, site);
    else this.sites.delete(siteId);
  }
}
