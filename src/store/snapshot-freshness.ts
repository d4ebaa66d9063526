import { UNDEFINED_TABLE } from './database.js';
import type { Logger } from '../observe/logger.js';

export interface CacheStatus {
  readonly loaded: boolean;
  /** Loaded, and not staler than the limit. */
  readonly ready: boolean;
  readonly listening: boolean;
  readonly sites: number;
  readonly activeKeys: number;
  /** When the last full load that succeeded began. */
  readonly lastSyncAt: string | null;
  /** On this process's clock, whatever the connections do: what readiness is judged on. */
  readonly staleSeconds: number;
  readonly maxStalenessSeconds: number;
  readonly pendingSites: number;
}

export interface SyncEvent {
  readonly kind: 'full' | 'sites';
  readonly sites: number;
  /** A resync that found nothing changed read none. */
  readonly sitesRead: number;
  readonly durationSeconds: number;
}

export interface SyncFailureEvent {
  readonly kind: 'full' | 'sites';
  readonly error: unknown;
}

const TICK_MAX_MS = 1_000;

/** A third of the staleness limit: a load that hangs fails, and is retried, well before the snapshot is too old. */
export function databaseTimeoutMs(maxStalenessSeconds: number): number {
  if (maxStalenessSeconds === 0) return 30_000;
  return Math.min(30_000, Math.max(500, (maxStalenessSeconds * 1000) / 3));
}

/** The age since the last successful full load began, on this process's clock, whatever the connections do. */
export class SnapshotFreshness {
  private everLoaded = false;
  private lastFullLoadStartedAt: number | undefined;

  constructor(readonly maxStalenessSeconds: number) {}

  get loaded(): boolean {
    return this.everLoaded;
  }

  fullLoadSucceeded(startedAt: number): void {
    this.lastFullLoadStartedAt = Math.max(this.lastFullLoadStartedAt ?? startedAt, startedAt);
    this.everLoaded = true;
  }

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

  /** A third of the staleness limit passed without a successful full load. */
  renewalDue(now: number): boolean {
    const limit = this.maxStalenessSeconds;
    const age = this.ageSeconds(now);
    return limit > 0 && (age === undefined || age >= limit / 3);
  }

  /** Six times within the staleness limit, at most a second apart. */
  tickMs(): number {
    const limitMs = this.maxStalenessSeconds * 1000;
    return limitMs === 0 ? TICK_MAX_MS : Math.max(100, Math.min(TICK_MAX_MS, limitMs / 6));
  }
}

/** Says why the database may misbehave, and what checks get meanwhile. */
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
