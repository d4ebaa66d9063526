import { randomBytes } from 'node:crypto';
import type { Adapter, AdapterFactory, Configuration, KoaContextWithOIDC } from 'oidc-provider';
import { SIGNING_ALGORITHM, type SigningKeySet } from './signing-keys.js';

export interface ProviderSettings {
  /** Every token's aud: serve's TOKEN_AUDIENCE. */
  readonly resource: string;
  readonly registrationToken: string;
  readonly tokenTtlSeconds: number;
  readonly keys: SigningKeySet;
  readonly adapter: AdapterFactory;
}

/** 256 bits, for registration and for a rotation. */
export function newClientSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** 128 bits, never starting with '-' or '_', so that it cannot read as an option after a command. */
export function newClientId(): string {
  return `c${randomBytes(16).toString('base64url')}`;
}

export type InvalidTarget = new () => Error;

// Client credentials only, RFC 9068 JWTs for one resource (RFC 8707), registration (RFC 7591, 7592) for the holder of
// the initial access token: the provider's checks of client metadata then refuse anything else at registration.
export function providerConfiguration(settings: ProviderSettings, InvalidTargetError: InvalidTarget): Configuration {
  const { resource, keys, tokenTtlSeconds } = settings;
  return {
    adapter: settings.adapter as unknown as (name: string) => Adapter,
    jwks: { keys: keys.keys.map((key) => ({ ...key })) } as Configuration['jwks'],
    clientAuthMethods: ['client_secret_basic', 'private_key_jwt'],
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
