import { createLocalJWKSet, errors, type JSONWebKeySet, type JWSHeaderParameters, type FlattenedJWSInput, type JWTVerifyGetKey } from 'jose';
import type { Logger } from '../observe/logger.js';
import { RateLimit } from '../common/rate-limit.js';
import { fetchKeySet, jwksDiscovery, publicKeySet, type ReadLimits } from './issuer-documents.js';

export interface KeySource {
  readonly loaded: boolean;
  readonly getKey: JWTVerifyGetKey;
  /** A kid missing from a set no fetch since the token arrived has read may be the issuer's newest. */
  readonly fetches?: { readonly started: number; readonly lastSucceeded: number };
}

export interface StoredKeySet {
  readonly jwks: unknown;
  readonly fetchedAt: number;
}

/** The last good key set, so that a new process starts with it while the issuer is unreachable. */
export interface KeySetStore {
  load(): Promise<StoredKeySet | undefined>;
  save(jwks: JSONWebKeySet, fetchedAt: number): Promise<void>;
}

export interface IssuerKeysOptions {
  /** Or else the issuer whose discovery document names the JWKS. */
  readonly jwksUrl?: string;
  readonly issuer?: string;
  /** The variable that set it, for log lines (default TOKEN_JWKS_URL). */
  readonly setting?: string;
  readonly logger: Logger;
  readonly store?: KeySetStore;
  readonly storeTimeoutMs?: number;
  /** Until the first fetch succeeds, and after one fails, tried again this often. */
  readonly retryMs?: number;
  /** A kid the set lacks fetches again at most this often: a flood of made-up kids costs one request each. */
  readonly unknownKeyCooldownMs?: number;
}

export type KeySetOrigin = 'issuer' | 'database';

/** Fetched or stored (token_key_sets holds the same bound). */
export const KEY_SET_MAX_BYTES = 256 * 1024;

const FETCH_LIMITS = { timeoutMs: 5_000, maxBytes: KEY_SET_MAX_BYTES };
const REFRESH_MS = 300_000;
const FAILURE_LOG_INTERVAL_MS = 60_000;
// An unchanged set is rewritten hourly: a new process's age gauge starts from the stored fetched_at.
const STORED_SET_RENEW_MS = 3_600_000;

function within<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took more than ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

interface HeldSet {
  readonly keySet: ReturnType<typeof createLocalJWKSet>;
  readonly size: number;
  /** For a stored set, when whoever stored it fetched it. */
  readonly fetchedAt: number;
  readonly origin: KeySetOrigin;
}

/** The issuer's signing keys: stored at start, fetched every few minutes; a failed fetch keeps the set held. */
export class IssuerKeys implements KeySource {
  private held: HeldSet | undefined;
  private stored: { readonly text: string; readonly fetchedAt: number } | undefined;
  private lastFetchAt = -Infinity;
  readonly fetches = { started: 0, lastSucceeded: 0 };
  private fetching: Promise<boolean> | undefined;
  private saving: Promise<void> | undefined;
  private firstAttempt: Promise<void> | undefined;
  private attempted = false;
  private timer: NodeJS.Timeout | undefined;
  private cooldownTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly failureLog = new RateLimit(FAILURE_LOG_INTERVAL_MS);
  private readonly storeFailureLog = new RateLimit(FAILURE_LOG_INTERVAL_MS);
  private readonly listeners: Array<(outcome: { readonly ok: boolean }) => void> = [];
  private readonly locateJwks: (limits: ReadLimits) => Promise<string>;
  private readonly storeTimeoutMs: number;

  constructor(private readonly options: IssuerKeysOptions) {
    const { jwksUrl, issuer } = options;
    if ((jwksUrl === undefined) === (issuer === undefined)) {
      throw new TypeError('IssuerKeys: give either jwksUrl or issuer');
    }
    this.locateJwks = jwksUrl === undefined ? jwksDiscovery(issuer ?? '') : async () => jwksUrl;
    this.storeTimeoutMs = options.storeTimeoutMs ?? 5_000;
  }

  get loaded(): boolean {
    return this.held !== undefined;
  }

  /** The stored set read and one fetch tried. */
  get settled(): boolean {
    return this.attempted;
  }

  get size(): number {
    return this.held?.size ?? 0;
  }

  get fetchedAt(): number | undefined {
    return this.held?.fetchedAt;
  }

  get origin(): KeySetOrigin | undefined {
    return this.held?.origin;
  }

  onFetch(listener: (outcome: { readonly ok: boolean }) => void): void {
    this.listeners.push(listener);
  }

  /** Reads the stored set, then starts fetching; resolves once the first fetch has ended (or on stop()). */
  start(): Promise<void> {
    this.firstAttempt ??= (async () => {
      await this.loadStored();
      if (!this.stopped) await this.fetchAndSchedule();
      this.attempted = true;
    })();
    return this.firstAttempt;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.cooldownTimer);
    await this.fetching;
    await this.saving;
  }

  readonly getKey: JWTVerifyGetKey = async (header: JWSHeaderParameters, token: FlattenedJWSInput) => {
    const keySet = this.held?.keySet;
    if (keySet === undefined) throw new errors.JWKSNoMatchingKey();
    try {
      return await keySet(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      if (!(await this.fetchForUnknownKey())) throw error;
      return (this.held?.keySet ?? keySet)(header, token);
    }
  };

  private hold(jwks: JSONWebKeySet, fetchedAt: number, origin: KeySetOrigin): void {
    this.held = { keySet: createLocalJWKSet(jwks), size: jwks.keys.length, fetchedAt, origin };
  }

  /** A store that fails or lies only costs the head start. */
  private async loadStored(): Promise<void> {
    const store = this.options.store;
    if (store === undefined) return;
    try {
      const stored = await within(store.load(), this.storeTimeoutMs, 'reading the stored key set');
      if (stored === undefined || this.held !== undefined) return;
      const jwks = publicKeySet(stored.jwks);
      if (!Number.isFinite(stored.fetchedAt)) throw new TypeError('the stored key set has no fetch time');
      // A fetch time in the future is a clock's error or a lie: the set counts as fetched now.
      const fetchedAt = Math.min(stored.fetchedAt, Date.now());
      this.hold(jwks, fetchedAt, 'database');
      this.stored = { text: JSON.stringify(jwks), fetchedAt };
      this.options.logger.info(
        { keys: jwks.keys.length, fetchedAt: new Date(fetchedAt).toISOString() },
        "holding the token issuer's last good key set from the database until the issuer answers",
      );
    } catch (error) {
      this.options.logger.warn({ err: error }, "reading the token issuer's last good key set from the database failed; starting without it");
    }
  }

  /** One write at a time, never awaited by a check. */
  private saveFetched(jwks: JSONWebKeySet, fetchedAt: number): void {
    const store = this.options.store;
    if (store === undefined || this.saving !== undefined || this.stopped) return;
    const text = JSON.stringify(jwks);
    if (this.stored !== undefined && this.stored.text === text && fetchedAt - this.stored.fetchedAt < STORED_SET_RENEW_MS) return;
    this.saving = within(store.save(jwks, fetchedAt), this.storeTimeoutMs, 'writing the key set')
      .then(
        () => {
          this.stored = { text, fetchedAt };
          this.storeFailureLog.reset();
        },
        (error: unknown) => {
          if (this.storeFailureLog.open()) this.options.logger.warn({ err: error }, "writing the token issuer's key set to the database failed; tokens verify with it all the same");
        },
      )
      .finally(() => (this.saving = undefined));
  }

  /** Fetches now if the cool-down allows, else once it ends; true when a fresh set was fetched now. */
  private async fetchForUnknownKey(): Promise<boolean> {
    const wait = this.lastFetchAt + (this.options.unknownKeyCooldownMs ?? 5_000) - Date.now();
    if (wait <= 0) return this.fetch();
    if (this.cooldownTimer === undefined && !this.stopped) {
      this.cooldownTimer = setTimeout(() => {
        this.cooldownTimer = undefined;
        void this.fetch();
      }, wait);
      this.cooldownTimer.unref();
    }
    return false;
  }

  private async fetchAndSchedule(): Promise<void> {
    const ok = await this.fetch();
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.fetchAndSchedule(), ok ? REFRESH_MS : (this.options.retryMs ?? 5_000));
    this.timer.unref();
  }

  private fetch(): Promise<boolean> {
    this.fetching ??= this.fetchOnce().finally(() => (this.fetching = undefined));
    return this.fetching;
  }

  private async fetchOnce(): Promise<boolean> {
    const fetchedAt = (this.lastFetchAt = Date.now());
    const ordinal = ++this.fetches.started;
    let ok = false;
    try {
      const jwks = await fetchKeySet(await this.locateJwks(FETCH_LIMITS), FETCH_LIMITS);
      this.hold(jwks, fetchedAt, 'issuer');
      this.fetches.lastSucceeded = ordinal;
      this.failureLog.reset();
      this.saveFetched(jwks, fetchedAt);
      ok = true;
    } catch (error) {
      if (this.failureLog.open()) {
        const held = this.origin === 'database' ? 'read from the database' : 'fetched before';
        const keeping = this.loaded
          ? `keeping the last good key set (${held})`
          : 'Bearer tokens are refused (106, keys-unavailable) until a key set is fetched';
        const setting = this.options.setting ?? 'TOKEN_JWKS_URL';
        this.options.logger.warn(
          { err: error, jwksUrl: this.options.jwksUrl, issuer: this.options.issuer },
          `fetching the token issuer's keys (${setting}) failed; ${keeping}`,
        );
      }
    }
    for (const listener of this.listeners) listener({ ok });
    return ok;
  }
}
