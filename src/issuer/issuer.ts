import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Adapter, KoaContextWithOIDC } from 'oidc-provider';
import type pg from 'pg';
import type { ClientIpSource } from '../config.js';
import { createLogger, type Logger } from '../observe/logger.js';
import { connectionPool } from '../store/database.js';
import { DISCOVERY_PATH, issuerRequestListener, REGISTRATION_PATH, TOKEN_PATH, type RequestListener } from './issuer-http.js';
import { clientSecretMatches, deleteExpiredObjects, isSecretDigest, postgresAdapter } from './postgres-adapter.js';
import { newClientSecret, providerConfiguration } from './provider-configuration.js';
import { routeProviderNotices } from './provider-notices.js';
import { currentSigningKeys, DEFAULT_KEY_ROTATION, sameKeySet } from './signing-keys.js';
import type { KeyRotationPolicy, SigningKeySet } from './signing-keys.js';
import { DEFAULT_TOKEN_ENDPOINT_LIMITS, TokenEndpointGuard, type TokenEndpointLimits } from './token-endpoint-guard.js';

export interface IssuerOptions {
  readonly databaseUrl: string;
  readonly port: number;
  readonly bindAddress?: string;
  /** An origin; default http://127.0.0.1:<the port listened on>. */
  readonly issuerUrl?: string;
  /** Every token's aud: serve's TOKEN_AUDIENCE. */
  readonly resource: string;
  readonly registrationToken: string;
  readonly tokenTtlSeconds?: number;
  readonly logger?: Logger;
  readonly keyRotation?: KeyRotationPolicy;
  /** How often each replica looks at the signing keys and deletes expired rows. */
  readonly keyCheckIntervalMs?: number;
  readonly tokenEndpointLimits?: TokenEndpointLimits;
  readonly clientIpSource?: ClientIpSource;
}

export interface RunningIssuer {
  /** The tokens' iss: serve's TOKEN_ISSUER. */
  readonly url: string;
  readonly tokenEndpoint: string;
  readonly registrationEndpoint: string;
  readonly discoveryUrl: string;
  readonly jwksUrl: string;
  /** Listened on; behind a gateway the issuer identifier may name another. */
  readonly port: number;
  readonly signingKid: string;
  close(): Promise<void>;
}

const DEFAULT_TTL_SECONDS = 600;
const DEFAULT_KEY_CHECK_MS = 60_000;
/** Every query of the issuer, and each wait for the keys' lock, ends within this. */
const QUERY_TIMEOUT_MS = 5_000;
const POOL_SIZE = 10;
const DRAIN_MS = 5_000;

// Only a secret's digest is kept: a read (RFC 7592 §2.1) does not answer it; an update naming a secret is told to leave
// it out; a PUT without client_secret (§2.2: omitted is null) gets a new secret, so the old one stops working.
function clientSecretAnswers(clients: Adapter, logger: Logger) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<unknown>): Promise<void> => {
    await next();
    const answer = ctx.body as Record<string, unknown>;
    if (ctx.status === 200 && ctx.oidc?.route === 'client' && isSecretDigest(answer?.client_secret)) delete answer.client_secret;
    if (ctx.status === 400 && ctx.oidc?.route === 'client_update' && String(answer?.error_description).startsWith('provided client_secret does not match')) {
      answer.error_description = 'leave client_secret out of the update: this issuer keeps only a digest of each secret, and an update without one issues a new secret (RFC 7592 section 2.2)';
    }
    if (ctx.method !== 'PUT' || ctx.status !== 200 || ctx.oidc?.route !== 'client_update') return;
    const sent = ctx.oidc.body as Record<string, unknown> | undefined;
    if (sent === undefined || 'client_secret' in sent || typeof answer.client_secret !== 'string' || typeof answer.client_id !== 'string') return;
    const stored = await clients.find(answer.client_id);
    if (!stored) return;
    const secret = newClientSecret();
    await clients.upsert(answer.client_id, { ...stored, client_secret: secret });
    answer.client_secret = secret;
    logger.info({ clientId: answer.client_id }, 'issuer: rotated the client secret');
  };
}

/** An OAuth 2.0 authorization server on oidc-provider over a migrated database, listening until close(). */
export async function startIssuer(options: IssuerOptions): Promise<RunningIssuer> {
  const logger = options.logger ?? createLogger('silent');
  const unrouteNotices = routeProviderNotices(logger);
  const closers: Array<() => Promise<unknown>> = [async () => unrouteNotices()];
  const close = async (): Promise<void> => {
    for (const closer of closers.splice(0).reverse()) await closer().catch((error: unknown) => logger.warn({ err: error }, 'issuer: closing failed'));
  };
  try {
    // Loaded here, with its notices routed: the module says on import when the runtime is one it does not support.
    const { default: Provider, errors } = await import('oidc-provider');
    const pool: pg.Pool = connectionPool(options.databaseUrl, { applicationName: 'sitekey-authz-issuer', max: POOL_SIZE, logger, timeoutMs: QUERY_TIMEOUT_MS });
    closers.push(() => pool.end());
    const rotation = options.keyRotation ?? DEFAULT_KEY_ROTATION;
    let keys: SigningKeySet = await currentSigningKeys(pool, rotation);
    const adapter = postgresAdapter(pool);
    const ttl = options.tokenTtlSeconds ?? DEFAULT_TTL_SECONDS;

    let handle: RequestListener = (_request, response) => response.writeHead(503).end();
    const guard = new TokenEndpointGuard(options.tokenEndpointLimits ?? DEFAULT_TOKEN_ENDPOINT_LIMITS);
    const server = createServer({ requestTimeout: 30_000, headersTimeout: 10_000, maxHeaderSize: 16_384 });
    server.keepAliveTimeout = 5_000;
    server.maxConnections = 4_096;
    server.listen(options.port, options.bindAddress ?? '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    closers.push(
      () =>
        new Promise<void>((resolveClose) => {
          // Requests in flight finish (within DRAIN_MS); idle kept-alive connections close at once.
          server.close(() => resolveClose());
          server.closeIdleConnections();
          setTimeout(() => server.closeAllConnections(), DRAIN_MS).unref();
        }),
    );
    const url = (options.issuerUrl ?? `http://127.0.0.1:${port}`).replace(/\/+$/, '');
    server.on('request', issuerRequestListener({ guard, provider: () => handle, clientIpSource: options.clientIpSource ?? { kind: 'peer' }, issuerUrl: url }));

    const build = (signingKeys: SigningKeySet): RequestListener => {
      const configuration = providerConfiguration(
        { resource: options.resource, registrationToken: options.registrationToken, tokenTtlSeconds: ttl, keys: signingKeys, adapter },
        errors.InvalidTarget,
      );
      const provider = new Provider(url, configuration);
      // Koa would print each error; they are logged here, without the request.
      provider.silent = true;
      // The URLs it writes (discovery, registration_client_uri) and the token endpoint an assertion
      // may name are built from the forwarded headers, which the listener sets from ISSUER_URL.
      provider.proxy = true;
      provider.on('server_error', (_ctx, error) => logger.error({ err: error }, 'issuer: the provider failed a request'));
      provider.on('registration_create.success', (_ctx, client) => logger.info({ clientId: client.clientId }, 'issuer: client registered'));
      provider.on('registration_delete.success', (_ctx, client) => logger.info({ clientId: client.clientId }, 'issuer: client deleted'));
      provider.use(clientSecretAnswers(adapter('Client'), logger));
      // The provider's own hook for a secret kept hashed (Client#compareClientSecret): the store keeps digests.
      Object.assign(provider.Client.prototype, {
        compareClientSecret(this: { clientSecret?: unknown }, presented: string) {
          return clientSecretMatches(this.clientSecret, presented);
        },
      });
      return provider.callback();
    };
    handle = build(keys);
    logger.info({ kid: keys.signingKid, published: keys.keys.map((key) => key.kid) }, 'issuer: signing keys loaded');

    const checkKeys = async (): Promise<void> => {
      try {
        const next = await currentSigningKeys(pool, rotation);
        if (!sameKeySet(keys, next)) {
          handle = build(next);
          keys = next;
          logger.info({ kid: keys.signingKid, published: keys.keys.map((key) => key.kid) }, 'issuer: signing keys changed');
        }
        await deleteExpiredObjects(pool);
      } catch (error) {
        // The keys held go on signing; the next check tries again.
        logger.warn({ err: error }, 'issuer: could not check the signing keys in the database');
      }
    };
    let checking: Promise<void> = Promise.resolve();
    const timer = setInterval(() => {
      checking = checking.then(checkKeys);
    }, options.keyCheckIntervalMs ?? DEFAULT_KEY_CHECK_MS);
    timer.unref();
    closers.push(async () => {
      clearInterval(timer);
      await checking;
    });

    return {
      url,
      tokenEndpoint: `${url}${TOKEN_PATH}`,
      registrationEndpoint: `${url}${REGISTRATION_PATH}`,
      discoveryUrl: `${url}${DISCOVERY_PATH}`,
      jwksUrl: `${url}/jwks`,
      port,
      get signingKid() {
        return keys.signingKid;
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
