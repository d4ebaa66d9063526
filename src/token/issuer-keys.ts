import { createLocalJWKSet, errors, type JSONWebKeySet, type JWSHeaderParameters, type FlattenedJWSInput, type JWTVerifyGetKey } from 'jose';
import type { Logger } from '../observe/logger.js';
import { RateLimit } from '../common/rate-limit.js';
import { isSecureOrLoopbackUrl } from '../config.js';

/** The key set a token verifier asks for the key a token names. */
export interface KeySource {
  /** A key set has been fetched at least once: tokens can be verified. */
  readonly loaded: boolean;
  readonly getKey: JWTVerifyGetKey;
}

export interface IssuerKeysOptions {
  /**
   * Where the key set is: a configured JWKS URL (TOKEN_JWKS_URL), or the jwks_uri of an issuer's
   * discovery document (ADMIN_ISSUER's /.well-known/openid-configuration, OpenID Connect Discovery §4).
   */
  readonly jwksUrl?: string;
  /** Or, instead, the issuer whose discovery document names the JWKS (ADMIN_ISSUER). */
  readonly issuer?: string;
  /** The variable that set it, for log lines (default TOKEN_JWKS_URL). */
  readonly setting?: string;
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

async function readBounded(response: Response, maxBytes: number, what: string): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > maxBytes) throw new JwksFetchError(`the ${what} is ${declared} bytes, more than the ${maxBytes} accepted`);
  const body = response.body;
  if (body === null) return '';
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of body) {
    received += chunk.byteLength;
    if (received > maxBytes) throw new JwksFetchError(`the ${what} is more than the ${maxBytes} bytes accepted`);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * One bounded GET of a JSON document: a time-out, a size limit, no redirects (the URL is configured,
 * or named by a document from a configured URL, and a redirect could lead off it).
 */
async function fetchJson(url: string, accept: string, what: string, limits: { readonly timeoutMs: number; readonly maxBytes: number }): Promise<unknown> {
  const response = await fetch(url, { headers: { accept }, redirect: 'error', signal: AbortSignal.timeout(limits.timeoutMs) });
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new JwksFetchError(`the ${what} URL answered HTTP ${response.status}`);
  }
  const text = await readBounded(response, limits.maxBytes, what);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new JwksFetchError(`the ${what} is not JSON`);
  }
}

/** The JWKS URL an issuer's discovery document names, held to the same rules as TOKEN_JWKS_URL. */
async function discoveredJwksUrl(issuer: string, limits: { readonly timeoutMs: number; readonly maxBytes: number }): Promise<string> {
  const document = await fetchJson(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`, 'application/json', 'discovery document', limits);
  const fields = (typeof document === 'object' && document !== null ? document : {}) as Record<string, unknown>;
  // OpenID Connect Discovery §4.3: the document must be the issuer's own.
  if (fields['issuer'] !== issuer) throw new JwksFetchError(`the discovery document names the issuer ${JSON.stringify(fields['issuer'])}, not ${issuer}`);
  const jwksUri = fields['jwks_uri'];
  if (typeof jwksUri !== 'string') throw new JwksFetchError('the discovery document has no jwks_uri');
  let allowed: boolean;
  try {
    allowed = isSecureOrLoopbackUrl(jwksUri);
  } catch {
    allowed = false;
  }
  if (!allowed) throw new JwksFetchError('the discovery document\'s jwks_uri is not an https:// URL (http:// only on loopback)');
  return jwksUri;
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
    if ((options.jwksUrl === undefined) === (options.issuer === undefined)) throw new TypeError('IssuerKeys: give either jwksUrl or issuer');
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

  private async download(): Promise<JSONWebKeySet> {
    const limits = { timeoutMs: this.options.fetchTimeoutMs ?? 5_000, maxBytes: this.options.maxBytes ?? 256 * 1024 };
    // The discovery document is read again on each fetch: an issuer may move its JWKS.
    const jwksUrl = this.options.jwksUrl ?? (await discoveredJwksUrl(this.options.issuer ?? '', limits));
    const parsed = await fetchJson(jwksUrl, 'application/jwk-set+json, application/json', 'JWKS', limits);
    if (!isKeySet(parsed)) throw new JwksFetchError('the JWKS has no "keys" array');
    return parsed;
  }
}
