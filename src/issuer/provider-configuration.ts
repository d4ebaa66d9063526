import { randomBytes } from 'node:crypto';
import type { Adapter, AdapterFactory, Configuration, KoaContextWithOIDC } from 'oidc-provider';
import type { SigningKeySet } from './signing-keys.js';
import { SIGNING_ALGORITHM } from './signing-keys.js';

/**
 * What the issuer is, said in oidc-provider's terms: OAuth 2.0 client credentials only, JWT access
 * tokens in RFC 9068's profile for one resource (RFC 8707), `client_secret_basic` and
 * `private_key_jwt` (RFC 7523), dynamic registration (RFC 7591) and management (RFC 7592) for the
 * holder of the initial access token. oidc-provider's own checks of client metadata then refuse any
 * other grant type, any response type and any other authentication method at registration.
 */

export interface ProviderSettings {
  /** The resource every token is for: its `aud`, serve's TOKEN_AUDIENCE. */
  readonly resource: string;
  readonly registrationToken: string;
  readonly tokenTtlSeconds: number;
  readonly keys: SigningKeySet;
  readonly adapter: AdapterFactory;
}

export const CLIENT_AUTH_METHODS = ['client_secret_basic', 'private_key_jwt'] as const;

/** A new client secret, for registration and for a rotation (issuer-http.ts): 256 bits. */
export function newClientSecret(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * A new client id: 128 bits, base64url, and never starting with '-' or '_', so that a person can type
 * it after a command (`token-client rotate-secret <client-id>`) without it reading as an option.
 */
export function newClientId(): string {
  return `c${randomBytes(16).toString('base64url')}`;
}

/** The error oidc-provider answers invalid_target with, taken from the loaded module. */
export type InvalidTarget = new () => Error;

export function providerConfiguration(settings: ProviderSettings, InvalidTargetError: InvalidTarget): Configuration {
  const { resource, keys, tokenTtlSeconds } = settings;
  return {
    adapter: settings.adapter as unknown as (name: string) => Adapter,
    jwks: { keys: keys.keys.map((key) => ({ ...key })) } as Configuration['jwks'],
    clientAuthMethods: [...CLIENT_AUTH_METHODS],
    // No response type: no authorization endpoint flow, so client_credentials is the only grant type
    // a client can register (oidc-provider derives the supported grant types from these and the features).
    responseTypes: [],
    scopes: [],
    clientDefaults: {
      grant_types: ['client_credentials'],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    ttl: { ClientCredentials: tokenTtlSeconds },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      registration: {
        enabled: true,
        initialAccessToken: settings.registrationToken,
        issueRegistrationAccessToken: true,
        idFactory: newClientId,
        secretFactory: newClientSecret,
      },
      registrationManagement: { enabled: true, rotateRegistrationAccessToken: true },
      resourceIndicators: {
        enabled: true,
        // A partner who leaves `resource` out still gets a JWT for the one resource (not an opaque
        // token that the service could not verify).
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: KoaContextWithOIDC, indicator: string) => {
          if (indicator !== resource) throw new InvalidTargetError();
          return {
            scope: '',
            audience: resource,
            accessTokenTTL: tokenTtlSeconds,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: SIGNING_ALGORITHM, kid: keys.signingKid } },
          };
        },
      },
    },
  };
}
