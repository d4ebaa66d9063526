import { createLocalJWKSet, errors, type JSONWebKeySet, type JWSHeaderParameters, type FlattenedJWSInput, type JWTVerifyGetKey } from 'jose';
import type { Logger } from '../observe/logger.js';
import { RateLimit } from '../common/rate-limit.js';
import { fetchJson, JwksDiscovery, type ReadLimits } from './issuer-documents.js';
import { publicKeySet } from './public-key-set.js';

/** The key set a token verifier asks for the key a token names. */
export interface KeySource {
  /** A key set is held (fetched, or read from the database): tokens can be verified. */
  readonly loaded: boolean;
  readonly getKey: JWTVerifyGetKey;
  /**
   * For a source that fetches its set again when a kid is missing: fetches started so far, and the
   * ordinal (1, 2, …) of the last that succeeded. A kid missing from a set that no fetch started
   * since a token arrived has read may be the issuer's newest key. Without them, a missing kid is unknown.
   */
  readonly fetches?: { readonly started: number; readonly lastSucceeded: number };
}

/** The last good key set as the database keeps it; hostile like anything read back. */
export interface StoredKeySet {
  readonly jwks: unknown;
  /** Epoch ms at which it was fetched from the issuer. */
  readonly fetchedAt: number;
}

/** Where the last good key set is kept, so that a new process starts with it while the issuer is unreachable. */
export interface KeySetStore {
  load(): Promise<StoredKeySet | undefined>;
  save(jwks: JSONWebKeySet, fetchedAt: number): Promise<void>;
}

export interface IssuerKeysOptions {
  /** Where the key set is: a configured JWKS URL (TOKEN_JWKS_URL). */
  readonly jwksUrl?: string;
  /**
   * Or, instead, the issuer whose discovery document names the JWKS (TOKEN_ISSUER, ADMIN_ISSUER):
   * RFC 8414 metadata, else OpenID Connect Discovery §4.
   */
  readonly issuer?: string;
  /** The variable that set it, for log lines (default TOKEN_JWKS_URL). */
  readonly setting?: string;
  readonly logger: Logger;
  /** Keeps the last good set, and starts with it. */
  readonly store?: KeySetStore;
  /** Bounds one read or write of the store (default 5 s). */
  readonly storeTimeoutMs?: number;
  /** Fetched again this often while it works (default 5 min). */
  readonly refreshMs?: number;
  /** Until the first fetch succeeds, and after one fails, tried again this often (default 5 s). */
  readonly retryMs?: number;
  /**
   * A token that names a kid the set lacks fetches the set again at most this often (default 5 s):
   * an issuer's new key is picked up within seconds of its first token, and a flood of made-up kids
   * costs the issuer one request per interval.
   */
  readonly unknownKeyCooldownMs?: number;
  /** Bounds on one fetch: its time and the size of the answer. */
  readonly fetchTimeoutMs?: number;
  readonly maxBytes?: number;
  readonly now?: () => number;
}

/** Where the set held now came from. */
export type KeySetOrigin = 'issuer' | 'database';

/** The largest JWKS read, fetched or stored (token_key_sets holds the same bound). */
export const KEY_SET_MAX_BYTES = 256 * 1024;

const FAILURE_LOG_INTERVAL_MS = 60_000;
/**
 * An unchanged set is written again after this long, so that the stored fetched_at, which a new
 * process's age gauge starts from, stays within an hour of the truth at one write an hour.
 */
const STORED_SET_RENEW_MS = 3_600_000;

function within<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took more than ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The issuer's signing keys, from its JWKS: the last good set from the store at start, then fetched
 * (again every refreshMs, and when a token names a key the set lacks). A fetch that fails keeps the
 * set held, so an issuer's outage does not refuse tokens that verify; with none held at all, the
 * token verifier refuses tokens (keys-unavailable) and API keys go on as ever. A fetched set that
 * changed is written to the store, off the path of any check. jose matches a token's header to a key
 * of the set; this class only decides when to fetch, and holds both sources to one rule (public-key-set.ts).
 */
export class IssuerKeys implements KeySource {
  private keySet: ReturnType<typeof createLocalJWKSet> | undefined;
  private keyCount = 0;
  private heldFetchedAt: number | undefined;
  private heldOrigin: KeySetOrigin | undefined;
  private stored: { readonly text: string; readonly fetchedAt: number } | undefined;
  private lastFetchAt = -Infinity;
  private fetchesStarted = 0;
  private lastSucceeded = 0;
  private fetching: Promise<boolean> | undefined;
  private saving: Promise<void> | undefined;
  private firstAttempt: Promise<void> | undefined;
  private attempted = false;
  private timer: NodeJS.Timeout | undefined;
  private cooldownTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly failureLog: RateLimit;
  private readonly storeFailureLog: RateLimit;
  private readonly listeners: Array<(outcome: { readonly ok: boolean }) => void> = [];
  private readonly locateJwks: (limits: ReadLimits) => Promise<string>;
  private readonly now: () => number;

  constructor(private readonly options: IssuerKeysOptions) {
    if ((options.jwksUrl === undefined) === (options.issuer === undefined)) throw new TypeError('IssuerKeys: give either jwksUrl or issuer');
    this.now = options.now ?? Date.now;
    this.failureLog = new RateLimit(FAILURE_LOG_INTERVAL_MS, this.now);
    this.storeFailureLog = new RateLimit(FAILURE_LOG_INTERVAL_MS, this.now);
    const { jwksUrl, issuer } = options;
    // The discovery document is read again on each fetch: an issuer may move its JWKS.
    const discovery = jwksUrl === undefined ? new JwksDiscovery(issuer ?? '') : undefined;
    this.locateJwks = discovery === undefined ? async () => jwksUrl ?? '' : (limits) => discovery.jwksUrl(limits);
  }

  get loaded(): boolean {
    return this.keySet !== undefined;
  }

  get fetches(): { readonly started: number; readonly lastSucceeded: number } {
    return { started: this.fetchesStarted, lastSucceeded: this.lastSucceeded };
  }

  /** The first attempt has ended: the stored set read and one fetch tried, each with its outcome. */
  get settled(): boolean {
    return this.attempted;
  }

  /** Keys in the set held now. */
  get size(): number {
    return this.keyCount;
  }

  /** Epoch ms at which the set held was fetched from the issuer (by this process or, for a stored set, by whoever stored it). */
  get fetchedAt(): number | undefined {
    return this.heldFetchedAt;
  }

  get origin(): KeySetOrigin | undefined {
    return this.heldOrigin;
  }

  /** Told after each fetch, for metrics. */
  onFetch(listener: (outcome: { readonly ok: boolean }) => void): void {
    this.listeners.push(listener);
  }

  /** Reads the stored set, then starts fetching; resolves once the first fetch has ended, whatever its outcome (or on stop()). */
  start(): Promise<void> {
    this.firstAttempt ??= (async () => {
      await this.loadStored();
      if (!this.stopped) await this.fetchAndSchedule();
      this.attempted = true;
    })();
    return this.firstAttempt;
  }

  /** Stops fetching; resolves once a fetch or a write under way has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.cooldownTimer);
    await this.fetching;
    await this.saving;
  }

  readonly getKey: JWTVerifyGetKey = async (header: JWSHeaderParameters, token: FlattenedJWSInput) => {
    const keySet = this.keySet;
    if (keySet === undefined) throw new errors.JWKSNoMatchingKey();
    try {
      return await keySet(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      if (!(await this.fetchForUnknownKey())) throw error;
      return (this.keySet ?? keySet)(header, token);
    }
  };

  private hold(jwks: JSONWebKeySet, fetchedAt: number, origin: KeySetOrigin): void {
    this.keySet = createLocalJWKSet(jwks);
    this.keyCount = jwks.keys.length;
    this.heldFetchedAt = fetchedAt;
    this.heldOrigin = origin;
  }

  private storeTimeoutMs(): number {
    return this.options.storeTimeoutMs ?? 5_000;
  }

  /** The stored set, held until a fetch succeeds; a store that fails or lies only costs the head start. */
  private async loadStored(): Promise<void> {
    const store = this.options.store;
    if (store === undefined) return;
    try {
      const stored = await within(store.load(), this.storeTimeoutMs(), 'reading the stored key set');
      if (stored === undefined || this.keySet !== undefined) return;
      const jwks = publicKeySet(stored.jwks);
      if (!Number.isFinite(stored.fetchedAt)) throw new TypeError('the stored key set has no fetch time');
      // A fetch time in the future is a clock's error or a lie: the set counts as fetched now.
      const fetchedAt = Math.min(stored.fetchedAt, this.now());
      this.hold(jwks, fetchedAt, 'database');
      this.stored = { text: JSON.stringify(jwks), fetchedAt };
      this.options.logger.info(
        { keys: this.keyCount, fetchedAt: new Date(fetchedAt).toISOString() },
        "holding the token issuer's last good key set from the database until the issuer answers",
      );
    } catch (error) {
      this.options.logger.warn({ err: error }, "reading the token issuer's last good key set from the database failed; starting without it");
    }
  }

  /** Writes a fetched set the store does not hold yet, or holds from over an hour ago; one write at a time, never awaited by a check. */
  private saveFetched(jwks: JSONWebKeySet, fetchedAt: number): void {
    const store = this.options.store;
    if (store === undefined || this.saving !== undefined || this.stopped) return;
    const text = JSON.stringify(jwks);
    if (this.stored !== undefined && this.stored.text === text && fetchedAt - this.stored.fetchedAt < STORED_SET_RENEW_MS) return;
    this.saving = within(store.save(jwks, fetchedAt), this.storeTimeoutMs(), 'writing the key set')
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
    const wait = this.lastFetchAt + (this.options.unknownKeyCooldownMs ?? 5_000) - this.now();
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
    this.timer = setTimeout(() => void this.fetchAndSchedule(), ok ? (this.options.refreshMs ?? 300_000) : (this.options.retryMs ?? 5_000));
    this.timer.unref();
  }

  /** One fetch at a time: callers that come while one runs share its outcome. */
  private fetch(): Promise<boolean> {
    this.fetching ??= this.fetchOnce().finally(() => (this.fetching = undefined));
    return this.fetching;
  }

  private async fetchOnce(): Promise<boolean> {
    const fetchedAt = (this.lastFetchAt = this.now());
    const ordinal = ++this.fetchesStarted;
    let ok = false;
    try {
      const jwks = publicKeySet(await this.download());
      this.hold(jwks, fetchedAt, 'issuer');
      this.lastSucceeded = ordinal;
      this.failureLog.reset();
      this.saveFetched(jwks, fetchedAt);
      ok = true;
    } catch (error) {
      if (this.failureLog.open()) {
        const keeping = this.loaded
          ? `keeping the last good key set (${this.heldOrigin === 'database' ? 'read from the database' : 'fetched before'})`
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

  private async download(): Promise<unknown> {
    const limits = { timeoutMs: this.options.fetchTimeoutMs ?? 5_000, maxBytes: this.options.maxBytes ?? KEY_SET_MAX_BYTES };
    return fetchJson(await this.locateJwks(limits), 'application/jwk-set+json, application/json', 'JWKS', limits);
  }
}
