import { UNDEFINED_TABLE } from './database.js';
import type { Logger } from '../observe/logger.js';

export interface CacheStatus {
  readonly loaded: boolean;
  /** Loaded, and not staler than the limit: checks can be decided. */
  readonly ready: boolean;
  readonly listening: boolean;
  readonly sites: number;
  readonly activeKeys: number;
  /** When the last full load that succeeded began: every change committed before it is in the snapshot. */
  readonly lastSyncAt: string | null;
  /** Seconds since lastSyncAt on this process's clock, whatever the connections do: what readiness is judged on. */
  readonly staleSeconds: number;
  readonly maxStalenessSeconds: number;
  /** Sites notified as changed whose reload has not succeeded yet. */
  readonly pendingSites: number;
}

export interface SyncEvent {
  readonly kind: 'full' | 'sites';
  readonly sites: number;
  /** Sites whose rows this sync read and built again: a resync that found nothing changed read none. */
  readonly sitesRead: number;
  readonly durationSeconds: number;
}

export interface SyncFailureEvent {
  readonly kind: 'full' | 'sites';
  readonly error: unknown;
}

const TICK_MAX_MS = 1_000;

/**
 * The bound on every database wait of the service: connecting, each query, each lock. A third of
 * the staleness limit, so that a load that hangs fails, and is retried, well before the snapshot
 * it would have renewed is too old.
 */
export function databaseTimeoutMs(maxStalenessSeconds: number): number {
  if (maxStalenessSeconds === 0) return 30_000;
  return Math.min(30_000, Math.max(500, (maxStalenessSeconds * 1000) / 3));
}

/**
 * Whether the snapshot is loaded, and its age: the time since the last successful full load began, on
 * this process's own clock, whatever state the connections are in. Checks are decided while it is
 * loaded and no staler than maxStalenessSeconds (0: never too stale).
 */
export class SnapshotFreshness {
  private everLoaded = false;
  private lastFullLoadStartedAt: number | undefined;

  constructor(readonly maxStalenessSeconds: number) {}

  get loaded(): boolean {
    return this.everLoaded;
  }

  /** A full load that began at startedAt (Date.now()) succeeded: every change committed before then is in the snapshot. */
  fullLoadSucceeded(startedAt: number): void {
    this.lastFullLoadStartedAt = Math.max(this.lastFullLoadStartedAt ?? startedAt, startedAt);
    this.everLoaded = true;
  }

  /** When the last full load that succeeded began, as CacheStatus.lastSyncAt gives it. */
  lastSyncAt(): string | null {
    return this.lastFullLoadStartedAt === undefined ? null : new Date(this.lastFullLoadStartedAt).toISOString();
  }

  ageSeconds(now: number): number | undefined {
    return this.lastFullLoadStartedAt === undefined ? undefined : Math.max(0, now - this.lastFullLoadStartedAt) / 1000;
  }

  isFresh(now: number): boolean {
    if (!this.everLoaded) return false;
    const limit = this.maxStalenessSeconds;
    return limit === 0 || (this.ageSeconds(now) ?? Infinity) <= limit;
  }

  /** A third of the staleness limit has passed without a successful full load (or none has succeeded yet). */
  renewalDue(now: number): boolean {
    const limit = this.maxStalenessSeconds;
    const age = this.ageSeconds(now);
    return limit > 0 && (age === undefined || age >= limit / 3);
  }

  /** How often to look whether the snapshot needs renewing: six times within the staleness limit, at most a second apart. */
  tickMs(): number {
    const limitMs = this.maxStalenessSeconds * 1000;
    return limitMs === 0 ? TICK_MAX_MS : Math.max(100, Math.min(TICK_MAX_MS, limitMs / 6));
  }
}

/** A line about a database that misbehaves, saying why it may, and what checks get meanwhile. */
export function warnOfOutage(logger: Logger, what: string, error: unknown, status: CacheStatus): void {
  const code = (error as { code?: unknown } | null)?.code;
  const consequence = !status.loaded
    ? 'no snapshot yet, checks answer UNAVAILABLE'
    : status.ready
      ? 'deciding from the last snapshot until SNAPSHOT_MAX_STALENESS_SECONDS'
      : 'the snapshot is too stale, checks answer UNAVAILABLE';
  const cause =
    code === UNDEFINED_TABLE
      ? 'the database answers but has no sitekey-authz tables: run `sitekey-authz migrate`, or set MIGRATE_ON_START=true'
      : 'credential database unreachable or not answering';
  logger.warn(
    {
      err: error instanceof Error ? { message: error.message, code } : String(error),
      loaded: status.loaded,
      ready: status.ready,
      staleSeconds: Math.round(status.staleSeconds),
      lastSyncAt: status.lastSyncAt,
      pendingSites: status.pendingSites,
    },
    `${what}: ${cause}; ${consequence}`,
  );
}

/** Observers of one kind of event: one that throws is logged, and the others still hear of it. */
export class SyncObservers<E> {
  private readonly listeners: Array<(event: E) => void> = [];

  constructor(private readonly logger: Logger) {}

  add(listener: (event: E) => void): void {
    this.listeners.push(listener);
  }

  tell(event: E): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.logger.warn({ err: error }, 'a credential sync observer failed');
      }
    }
  }
}
