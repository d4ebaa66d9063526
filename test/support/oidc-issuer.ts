import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import type { Configuration, Provider as ProviderType } from 'oidc-provider';
import { loadProviderModule, withoutProviderNotices } from './oidc-provider-module.js';

/**
 * A real OpenID provider (the `oidc-provider` package, a certified implementation) on loopback, as the
 * platform's authorization server: OAuth 2.0 client credentials, and for a resource indicator (RFC 8707)
 * an access token in the JWT profile of RFC 9068 (`typ: at+jwt`, `client_id`, `aud` = the resource).
 * Every token is minted by the provider itself through its token endpoint; nothing here edits a token.
 */

export interface TestIssuerClient {
  readonly clientId: string;
  readonly clientSecret: string;
}

/** The signing algorithms a test can ask for; the issuer's key type follows from it. */
export type TestIssuerSigningAlgorithm = 'RS256' | 'PS256' | 'ES256' | 'EdDSA';

export interface TestIssuerOptions {
  readonly clients: readonly TestIssuerClient[];
  /** The resource indicator the tokens are for, which becomes their `aud`. */
  readonly audience?: string;
  /** Further resource indicators the issuer also mints tokens for (a token meant for another API). */
  readonly otherAudiences?: readonly string[];
  readonly accessTokenTtlSeconds?: number;
  readonly signingAlgorithm?: TestIssuerSigningAlgorithm;
  /** 0 (the default) lets the system pick a free port. */
  readonly port?: number;
  /**
   * Dynamic client registration (RFC 7591) and its management (RFC 7592), open only to the bearer of
   * the issuer's initial access token; the registration access token is rotated on each update, and an
   * update gives a client that authenticates with a secret a new one. Off by default.
   */
  readonly registration?: boolean;
}

/** What a test learns of registration at the issuer: the initial access token, and what was done. */
export interface TestIssuerRegistration {
  readonly endpoint: string;
  readonly initialAccessToken: string;
  /** `create <client id>`, `update <client id>`, `delete <client id>`, in order. */
  readonly events: readonly string[];
  /** Every registration access token it handed out, for a test to look for where none may be. */
  readonly accessTokens: readonly string[];
  /** Whether the issuer still holds the client. */
  has(clientId: string): Promise<boolean>;
}

export interface TestIssuer {
  /** e.g. http://127.0.0.1:41234, what the tokens' `iss` says. */
  readonly issuer: string;
  /** From the discovery document's `jwks_uri`. */
  readonly jwksUrl: string;
  /** The resource indicator, default 'https://partner-api.test'. */
  readonly audience: string;
  readonly tokenEndpoint: string;
  /** With the `registration` option. */
  readonly registration: TestIssuerRegistration | undefined;
  /**
   * A fresh access token for the client via a real POST to the token endpoint (client_secret_basic),
   * grant_type=client_credentials, resource=audience (or `resource`, one of `otherAudiences`; null:
   * none, for which the issuer hands out an opaque token, as a partner who forgets it gets).
   * Fails with the endpoint's error (e.g. invalid_client) when the issuer refuses.
   */
  mintAccessToken(client: TestIssuerClient, options?: { scope?: string; resource?: string | null }): Promise<string>;
  /**
   * The issuer starts signing new tokens with a NEW key (new kid) and publishes it in its JWKS; the old
   * keys stay published, as real issuers rotate. Resolves when the new JWKS is served. The provider is
   * rebuilt behind the same listening socket, so the issuer URL does not change.
   */
  rotateSigningKey(): Promise<{ readonly kid: string }>;
  /** The kid currently used to sign. */
  readonly signingKid: string;
  close(): Promise<void>;
}

/** What the token endpoint answers, RFC 6749 §5.1 and §5.2. */
interface TokenEndpointAnswer {
  readonly access_token?: unknown;
  readonly error?: unknown;
  readonly error_description?: unknown;
}

const DEFAULT_AUDIENCE = 'https://partner-api.test';
const DEFAULT_TTL_SECONDS = 300;
const LOOPBACK = '127.0.0.1';

type SigningKey = JWK & { readonly kid: string };

/** A private signing key as a JWK with its kid (the RFC 7638 thumbprint, as many issuers use). */
async function newSigningKey(alg: TestIssuerSigningAlgorithm): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(jwk);
  return { ...jwk, kid, alg, use: 'sig' };
}

/**
 * An RSA key takes a tenth of a second or more to make on a busy machine: one spare per algorithm is
 * made ahead, so a rotation or the next issuer rarely waits. Each key still goes to one issuer only,
 * so a token of one test issuer never verifies against another's key set.
 */
const spareKeys = new Map<TestIssuerSigningAlgorithm, Promise<SigningKey>>();
function takeSigningKey(alg: TestIssuerSigningAlgorithm): Promise<SigningKey> {
  const key = spareKeys.get(alg) ?? newSigningKey(alg);
  const spare = newSigningKey(alg);
  spare.catch(() => spareKeys.get(alg) === spare && spareKeys.delete(alg));
  spareKeys.set(alg, spare);
  return key;
}

// The registration policy that makes an update (RFC 7592 §2.2) issue a new client secret: oidc-provider
// keeps the secret otherwise, and the RFC lets the server choose.
const NEW_SECRET_ON_UPDATE = 'new-secret-on-update';

function checkOptions(options: TestIssuerOptions): void {
  if (options.clients.length === 0 && options.registration !== true) throw new TypeError('startTestIssuer: give at least one client');
  const ttl = options.accessTokenTtlSeconds;
  if (ttl !== undefined && !(Number.isSafeInteger(ttl) && ttl > 0)) {
    throw new TypeError(`startTestIssuer: accessTokenTtlSeconds must be a positive whole number of seconds, not ${ttl}`);
  }
}

export async function startTestIssuer(options: TestIssuerOptions): Promise<TestIssuer> {
  checkOptions(options);
  const { Provider, errors } = await loadProviderModule();
  const audience = options.audience ?? DEFAULT_AUDIENCE;
  const resources = new Set([audience, ...(options.otherAudiences ?? [])]);
  const alg = options.signingAlgorithm ?? 'RS256';
  const ttl = options.accessTokenTtlSeconds ?? DEFAULT_TTL_SECONDS;

  // The socket outlives the provider: a rotation swaps in a provider with the new key set behind it.
  let handle: ((request: IncomingMessage, response: ServerResponse) => void) | undefined;
  const server: Server = createServer((request, response) => {
    if (handle) return handle(request, response);
    response.writeHead(503).end();
  });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, LOOPBACK, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const { port } = server.address() as AddressInfo;
  const issuer = `http://${LOOPBACK}:${port}`;

  /** The last error the provider met while answering, to explain a 500 of the token endpoint. */
  let lastServerError: Error | undefined;
  const takeServerError = (): Error | undefined => {
    const error = lastServerError;
    lastServerError = undefined;
    return error;
  };
  const keys: SigningKey[] = [];
  let signingKid = '';
  const registrationEvents: string[] = [];
  const registrationAccessTokens: string[] = [];
  const keepAccessToken = (body: unknown): void => {
    const token = (body as { registration_access_token?: unknown } | undefined)?.registration_access_token;
    if (typeof token === 'string') registrationAccessTokens.push(token);
  };

  const clients = options.clients.map((client) => ({
    client_id: client.clientId,
    client_secret: client.clientSecret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic' as const,
  }));

  const buildProvider = (): ProviderType => {
    const kid = signingKid;
    const configuration: Configuration = {
      clients,
      // Newest first; `kid` below names the signing key. Earlier keys stay published, so the tokens
      // they signed still verify until they expire.
      jwks: { keys: [...keys].reverse() } as Configuration['jwks'],
      clientDefaults: { id_token_signed_response_alg: alg },
      ttl: { ClientCredentials: ttl },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        ...(options.registration === true
          ? {
              registration: {
                enabled: true,
                initialAccessToken: true,
                issueRegistrationAccessToken: true,
                policies: {
                  [NEW_SECRET_ON_UPDATE]: (ctx, properties) => {
                    if (ctx.oidc.route === 'client_update' && properties['token_endpoint_auth_method'] === 'client_secret_basic') {
                      properties['client_secret'] = randomBytes(32).toString('base64url');
                    }
                  },
                },
              },
              registrationManagement: { enabled: true, rotateRegistrationAccessToken: true },
            }
          : {}),
        resourceIndicators: {
          enabled: true,
          defaultResource: () => undefined,
          useGrantedResource: () => false,
          // Registered resource servers only (RFC 8707 §2: invalid_target otherwise). Every scope a
          // client asks for is granted, so a test can put any scope in a token.
          getResourceServerInfo: (ctx, resourceIndicator) => {
            if (!resources.has(resourceIndicator)) throw new errors.InvalidTarget();
            const requested = ctx.oidc.params?.scope;
            return {
              scope: typeof requested === 'string' ? requested : '',
              accessTokenFormat: 'jwt',
              jwt: { sign: { alg, kid } },
            };
          },
        },
      },
    };
    const provider = withoutProviderNotices(() => new Provider(issuer, configuration));
    provider.on('server_error', (_ctx, error) => (lastServerError = error));
    provider.on('registration_create.success', (ctx, client) => {
      registrationEvents.push(`create ${client.clientId}`);
      keepAccessToken(ctx.body);
    });
    provider.on('registration_update.success', (ctx, client) => {
      registrationEvents.push(`update ${client.clientId}`);
      keepAccessToken(ctx.body);
    });
    provider.on('registration_delete.success', (_ctx, client) => registrationEvents.push(`delete ${client.clientId}`));
    // Koa would print each error; the token endpoint's answer and the last server error report them instead.
    provider.silent = true;
    return provider;
  };

  let provider: ProviderType | undefined;
  const useNewKey = async (): Promise<string> => {
    const key = await takeSigningKey(alg);
    keys.push(key);
    signingKid = key.kid;
    provider = buildProvider();
    handle = provider.callback();
    return key.kid;
  };

  const close = (): Promise<void> =>
    new Promise<void>((resolveClose, reject) => {
      handle = undefined;
      if (!server.listening) return resolveClose();
      server.close((error) => (error ? reject(error) : resolveClose()));
      // Kept-alive connections (fetch's, jose's JWKS fetches) would hold close() open.
      server.closeAllConnections();
    });

  let jwksUrl: string;
  let tokenEndpoint: string;
  let registration: TestIssuerRegistration | undefined;
  try {
    await useNewKey();
    const discovery = await getJson(`${issuer}/.well-known/openid-configuration`);
    jwksUrl = stringField(discovery, 'jwks_uri');
    tokenEndpoint = stringField(discovery, 'token_endpoint');
    if (options.registration === true && provider !== undefined) {
      // Kept by the provider's store, which outlives a rebuild for a key rotation.
      const initialAccessToken = await new provider.InitialAccessToken({ policies: [NEW_SECRET_ON_UPDATE] }).save();
      registration = {
        endpoint: stringField(discovery, 'registration_endpoint'),
        initialAccessToken,
        events: registrationEvents,
        accessTokens: registrationAccessTokens,
        has: async (clientId) => (await provider?.Client.find(clientId)) !== undefined,
      };
    }
  } catch (error) {
    await close();
    throw error;
  }

  const mintAccessToken = async (client: TestIssuerClient, mintOptions: { scope?: string; resource?: string | null } = {}): Promise<string> => {
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (mintOptions.resource !== null) form.set('resource', mintOptions.resource ?? audience);
    if (mintOptions.scope !== undefined) form.set('scope', mintOptions.scope);
    takeServerError();
    const response = await fetch(tokenEndpoint, {
      method: 'POST',
      headers: { authorization: basicCredentials(client), 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    const answer = (await response.json().catch(() => ({}))) as TokenEndpointAnswer;
    if (response.ok && typeof answer.access_token === 'string') return answer.access_token;
    const serverError = takeServerError();
    const cause = serverError ? ` (${serverError.message})` : '';
    throw new TokenRequestRefused(response.status, String(answer.error), String(answer.error_description ?? '') + cause);
  };

  const rotateSigningKey = async (): Promise<{ readonly kid: string }> => {
    const kid = await useNewKey();
    // The swap is synchronous, so the next request sees the new key set; read it back to be sure.
    const published = await getJson(jwksUrl);
    const kids = Array.isArray(published.keys) ? published.keys.map((key: { kid?: unknown }) => key.kid) : [];
    if (!kids.includes(kid)) throw new Error(`the issuer's JWKS does not list the new key ${kid}: ${JSON.stringify(kids)}`);
    return { kid };
  };

  return {
    issuer,
    jwksUrl,
    audience,
    tokenEndpoint,
    registration,
    mintAccessToken,
    rotateSigningKey,
    get signingKid() {
      return signingKid;
    },
    close,
  };
}

/** The token endpoint said no: `error` is the OAuth error code (RFC 6749 §5.2), e.g. invalid_client. */
export class TokenRequestRefused extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
  ) {
    super(`token endpoint answered ${status} ${error}${description ? `: ${description}` : ''}`);
    this.name = 'TokenRequestRefused';
  }
}

/** RFC 6749 §2.3.1: id and secret are form-encoded before they are joined and base64-encoded. */
function basicCredentials(client: TestIssuerClient): string {
  const encode = (value: string): string => new URLSearchParams({ v: value }).toString().slice(2);
  return `Basic ${Buffer.from(`${encode(client.clientId)}:${encode(client.clientSecret)}`).toString('base64')}`;
}

async function getJson(url: string): Promise<Record<string, unknown> & { keys?: unknown }> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
  return (await response.json()) as Record<string, unknown>;
}

function stringField(document: Record<string, unknown>, name: string): string {
  const value = document[name];
  if (typeof value !== 'string') throw new Error(`the discovery document has no ${name}`);
  return value;
}
