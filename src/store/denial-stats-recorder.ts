import type { ErrorId, SiteId } from '../decision/types.js';
import { columnsOf, deleteExpiredHours, HourlyCountsRecorder, seenColumns, type HourlyCountsOptions } from './periodic-flush.js';

interface DenialStatsOptions extends HourlyCountsOptions {
  /** DENIAL_ROWS_PER_SITE_HOUR unless a test says otherwise. */
  readonly maxRowsPerSiteHour?: number;
}

interface Group {
  readonly siteId: SiteId;
  readonly errorId: ErrorId;
  readonly clientIp: string;
  readonly rehearsal: boolean;
  /** SHADOW_MODE let it through: a would-be refusal. */
  readonly shadow: boolean;
  count: number;
  /** Client addresses counted in this group: 1, or for an OVERFLOW_ADDRESS group those it stands for. */
  addresses: number;
  firstSeen: number;
  lastSeen: number;
}

/** Where refusals beyond maxGroups are counted: their site and error are kept, the address is not. */
export const OVERFLOW_ADDRESS = 'other';

/** Refusals of unknown or disabled sites (101) are counted together: the id is whatever a client sent. */
export const UNKNOWN_SITES = '0';
export const UNKNOWN_SITES_ADDRESS = 'any';

/** A client with many source addresses would otherwise add a row for each (tens of millions a day). */
export const DENIAL_ROWS_PER_SITE_HOUR = 1_000;

// Once the hour holds $10 rows with addresses, a new address goes to the OVERFLOW_ADDRESS row; two replicas at
// once may each fill the cap.
const FLUSH = `WITH expired AS (${deleteExpiredHours('denial_stats', '$9', '$12')}),
  batch AS (
    SELECT date_trunc('hour', v.first_seen) AS hour, v.site_id, v.error_id, v.client_ip, v.rehearsal, v.shadow, v.count, v.addresses, v.first_seen, v.last_seen,
           v.client_ip = '${OVERFLOW_ADDRESS}' OR EXISTS (
             SELECT 1 FROM denial_stats d
              WHERE d.hour = date_trunc('hour', v.first_seen) AND d.site_id = v.site_id AND d.error_id = v.error_id
                AND d.client_ip = v.client_ip AND d.rehearsal = v.rehearsal AND d.shadow = v.shadow) AS placed
      FROM unnest($1::bigint[], $2::smallint[], $3::text[], $4::boolean[], $11::boolean[], $5::bigint[], $6::bigint[], $7::timestamptz[], $8::timestamptz[])
           AS v(site_id, error_id, client_ip, rehearsal, shadow, count, addresses, first_seen, last_seen)
     WHERE date_trunc('hour', v.first_seen) >= now() - make_interval(days => $9)),
  held AS (
    SELECT d.hour, d.site_id, count(*) AS rows FROM denial_stats d
     WHERE d.client_ip <> '${OVERFLOW_ADDRESS}' AND (d.hour, d.site_id) IN (SELECT hour, site_id FROM batch)
     GROUP BY d.hour, d.site_id),
  routed AS (
    SELECT b.hour, b.site_id, b.error_id, b.rehearsal, b.shadow, b.count, b.first_seen, b.last_seen,
           CASE WHEN b.placed OR coalesce(h.rows, 0) + row_number() OVER (PARTITION BY b.hour, b.site_id, b.placed ORDER BY b.count DESC, b.client_ip) <= $10
                THEN b.client_ip ELSE '${OVERFLOW_ADDRESS}' END AS client_ip,
           b.addresses
      FROM batch b LEFT JOIN held h ON h.hour = b.hour AND h.site_id = b.site_id)
  INSERT INTO denial_stats AS d (hour, site_id, error_id, client_ip, rehearsal, shadow, count, overflow_addresses, first_seen, last_seen)
  SELECT hour, site_id, error_id, client_ip, rehearsal, shadow, sum(count)::bigint,
         CASE WHEN client_ip = '${OVERFLOW_ADDRESS}' THEN sum(addresses)::bigint ELSE 0 END, min(first_seen), max(last_seen)
    FROM routed GROUP BY hour, site_id, error_id, client_ip, rehearsal, shadow
  ON CONFLICT (hour, site_id, error_id, client_ip, rehearsal, shadow) DO UPDATE
     SET count = d.count + excluded.count, overflow_addresses = d.overflow_addresses + excluded.overflow_addresses,
         first_seen = LEAST(d.first_seen, excluded.first_seen), last_seen = GREATEST(d.last_seen, excluded.last_seen)`;

/** Refusals by site, error and client address; groups beyond maxGroups are counted under OVERFLOW_ADDRESS. */
export class DenialStatsRecorder extends HourlyCountsRecorder {
  private groups = new Map<string, Group>();
  private overflowed = 0;
  /** Counted under OVERFLOW_ADDRESS since the last flush: an address counts once (up to maxGroups of them). */
  private overflowSeen = new Set<string>();
  /** A flood repeats the group of the last refusal under its own address, which then costs no key. */
  private latest: Group | undefined;

  constructor(private readonly options: DenialStatsOptions) {
    super(options, 'refusal counts', 'denial_stats');
  }

  record(siteId: SiteId, errorId: ErrorId, clientIp: string, rehearsal: boolean, at: number, shadow = false): void {
    const latest = this.latest;
    if (
      latest !== undefined &&
      latest.siteId === siteId &&
      latest.errorId === errorId &&
      latest.clientIp === clientIp &&
      latest.rehearsal === rehearsal &&
      latest.shadow === shadow
    ) {
      latest.count += 1;
      latest.lastSeen = Math.max(latest.lastSeen, at);
      return;
    }
    this.add({ siteId, errorId, clientIp, rehearsal, shadow, count: 1, addresses: 1, firstSeen: at, lastSeen: at });
  }

  private add(counted: Group): void {
    const keyOf = (address: string) => `${counted.siteId}|${counted.errorId}|${address}|${counted.rehearsal}|${counted.shadow}`;
    const ownKey = keyOf(counted.clientIp);
    let key = ownKey;
    let addresses = counted.addresses;
    let group = this.groups.get(key);
    if (group === undefined && this.groups.size >= this.options.maxGroups) {
      this.overflowed += counted.count;
      key = keyOf(OVERFLOW_ADDRESS);
      group = this.groups.get(key);
      if (counted.clientIp !== OVERFLOW_ADDRESS) {
        if (this.overflowSeen.has(ownKey)) addresses = 0;
        else if (this.overflowSeen.size < this.options.maxGroups) this.overflowSeen.add(ownKey);
      }
    }
    if (group === undefined) {
      const clientIp = key === ownKey ? counted.clientIp : OVERFLOW_ADDRESS;
      // An address's group stands for that one address; the overflow group adds those it takes, below.
      group = { ...counted, clientIp, count: 0, addresses: clientIp === OVERFLOW_ADDRESS ? 0 : addresses };
      this.groups.set(key, group);
    }
    if (group.clientIp !== OVERFLOW_ADDRESS) this.latest = group;
    group.count += counted.count;
    if (group.clientIp === OVERFLOW_ADDRESS) group.addresses += addresses;
    group.firstSeen = Math.min(group.firstSeen, counted.firstSeen);
    group.lastSeen = Math.max(group.lastSeen, counted.lastSeen);
  }

  /** Groups held now, for tests and metrics. */
  get size(): number {
    return this.groups.size;
  }

  protected async write(): Promise<void> {
    if (this.groups.size === 0) return this.expireIdle();
    const batch = [...this.groups.values()];
    const overflowed = this.overflowed;
    this.groups = new Map();
    this.latest = undefined;
    this.overflowed = 0;
    this.overflowSeen = new Set();
    if (overflowed > 0) {
      this.options.logger.warn({ overflowed, groups: batch.length }, `more refusal groups than fit between flushes; the rest were counted as client address "${OVERFLOW_ADDRESS}"`);
    }
    // Kept for the next flush, as long as they fit: a database down for long must not grow it.
    await this.failures.attempt(
      () =>
        this.options.pool.query(FLUSH, [
          ...columnsOf(batch, ['siteId', 'errorId', 'clientIp', 'rehearsal', 'count', 'addresses']),
          ...seenColumns(batch),
          this.options.retentionDays,
          this.options.maxRowsPerSiteHour ?? DENIAL_ROWS_PER_SITE_HOUR,
          batch.map((group) => group.shadow),
          this.expiredRowsPerFlush,
        ]),
      () => batch.forEach((group) => this.add(group)),
      { groups: batch.length },
    );
  }
}
