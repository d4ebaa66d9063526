import { createLocalJWKSet, errors, type JSONWebKeySet, type JWSHeaderParameters, type FlattenedJWSInput, type JWTVerifyGetKey } from 'jose';
import type { Logger } from '../observe/logger.js';
import { RateLimit } from '../common/rate-limit.js';

/** The key set a token verifier asks for the key a token names. */
export interface KeySource {
  /** A key set has been fetched at least once: tokens can be verified. */
  readonly loaded: boolean;
  readonly getKey: JWTVerifyGetKey;
}

export interface IssuerKeysOptions {
  /** TOKEN_JWKS_URL. */
  readonly jwksUrl: string;
  readonly logger: Logger;
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

/** Why a JWKS fetch gave no key set; said in the log line. */
class JwksFetchError extends Error {
  override readonly name = 'JwksFetchError';
}

const FAILURE_LOG_INTERVAL_MS = 60_000;

async function readBounded(response: Response, maxBytes: number): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > maxBytes) throw new JwksFetchError(`the JWKS is ${declared} bytes, more than the ${maxBytes} accepted`);
  const body = response.body;
  if (body === null) return '';
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of body) {
    received += chunk.byteLength;
    if (received > maxBytes) throw new JwksFetchError(`the JWKS is more than the ${maxBytes} bytes accepted`);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

function isKeySet(value: unknown): value is JSONWebKeySet {
  return typeof value === 'object' && value !== null && Array.isArray((value as { keys?: unknown }).keys);
}

/**
 * The issuer's signing keys, from its JWKS: fetched at start (readiness waits for them, as for the
 * credential snapshot), again every refreshMs, and when a token names a key the set lacks. A fetch
 * that fails keeps the last good set, so an issuer's outage does not refuse tokens that verify.
 * jose matches a token's header to a key of the set; this class only decides when to fetch.
 */
export class IssuerKeys implements KeySource {
  private keySet: ReturnType<typeof createLocalJWKSet> | undefined;
  private keyCount = 0;
  private lastFetchAt = -Infinity;
  private fetching: Promise<boolean> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private cooldownTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly failureLog: RateLimit;
  private readonly listeners: Array<(outcome: { readonly ok: boolean }) => void> = [];
  private resolveLoaded: () => void = () => undefined;
  private readonly firstLoad = new Promise<void>((resolve) => (this.resolveLoaded = resolve));
  private readonly now: () => number;

  constructor(private readonly options: IssuerKeysOptions) {
    this.now = options.now ?? Date.now;
    this.failureLog = new RateLimit(FAILURE_LOG_INTERVAL_MS, this.now);
  }

  get loaded(): boolean {
    return this.keySet !== undefined;
  }

  /** Keys in the set held now. */
  get size(): number {
    return this.keyCount;
  }

  /** Told after each fetch, for metrics. */
  onFetch(listener: (outcome: { readonly ok: boolean }) => void): void {
    this.listeners.push(listener);
  }

  /** Starts fetching; resolves once a key set is held (or on stop()). */
  start(): Promise<void> {
    void this.fetchAndSchedule();
    return this.firstLoad;
  }

  /** Stops fetching; resolves once a fetch under way has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.cooldownTimer);
    this.resolveLoaded();
    await this.fetching;
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
    this.lastFetchAt = this.now();
    let ok = false;
    try {
      const jwks = await this.download();
      this.keySet = createLocalJWKSet(jwks);
      this.keyCount = jwks.keys.length;
      this.failureLog.reset();
      this.resolveLoaded();
      ok = true;
    } catch (error) {
      if (this.failureLog.open()) {
        const keeping = this.loaded ? 'keeping the last key set that was fetched' : 'Bearer tokens cannot be verified until one is fetched';
        this.options.logger.warn({ err: error, jwksUrl: this.options.jwksUrl }, `fetching the token issuer's keys (TOKEN_JWKS_URL) failed; ${keeping}`);
      }
    }
    for (const listener of this.listeners) listener({ ok });
    return ok;
  }

  private async download(): Promise<JSONWebKeySet> {
    const maxBytes = this.options.maxBytes ?? 256 * 1024;
    // Redirects are refused: the JWKS URL is configured, and a redirect could lead off it.
    const response = await fetch(this.options.jwksUrl, {
      headers: { accept: 'application/jwk-set+json, application/json' },
      redirect: 'error',
      signal: AbortSignal.timeout(this.options.fetchTimeoutMs ?? 5_000),
    });
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new JwksFetchError(`the JWKS URL answered HTTP ${response.status}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(await readBounded(response, maxBytes));
    } catch (error) {
      if (error instanceof JwksFetchError) throw error;
      throw new JwksFetchError('the JWKS is not JSON');
    }
    if (!isKeySet(parsed)) throw new JwksFetchError('the JWKS has no "keys" array');
    return parsed;
  }
}
