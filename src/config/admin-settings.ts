import { ConfigError, integer, list, port, refuseWithout, text, textOrDefault, type Env } from './env-values.js';
import { plainDefault } from './settings.js';
import { jwksUrl, NO_TOKEN_TYPE, normalizedTokenType, tokenMaxAge, type AccessTokenRules } from './token-settings.js';

/** The admin port's tokens follow the partner tokens' default rules, with types and a maximum age of their own. */
export interface AdminSettings extends AccessTokenRules {
  readonly port: number;
  readonly rolesClaim: string;
  readonly oidcClientId: string | undefined;
  readonly oidcClientSecret: string | undefined;
  /** Without a trailing slash. */
  readonly publicUrl: string;
  readonly xffTrustedHops: number;
}

// RFC 9068's type, the plain JWT that Keycloak, Entra ID and Auth0 write by default, or no typ (Okta).
const ADMIN_TOKEN_TYPES = ['at+jwt', 'jwt', NO_TOKEN_TYPE];

function adminTokenTypes(env: Env): string[] {
  const types = list(env, 'ADMIN_TOKEN_TYPES');
  for (const type of types) {
    if (!ADMIN_TOKEN_TYPES.includes(normalizedTokenType(type))) {
      throw new ConfigError('ADMIN_TOKEN_TYPES', `"${type}" is not one of at+jwt, JWT or none (a token without typ), e.g. at+jwt,JWT for a provider that writes JWT`);
    }
  }
  return [...new Set(types.map(normalizedTokenType))];
}
// A claim name as providers write them: a word, or a URI such as https://example.com/claims/roles.
const CLAIM_NAME = /^[\x21-\x7e]{1,200}$/;

export function adminSettings(env: Env, otherPorts: { readonly grpc: number; readonly metrics: number; readonly probes: number | undefined }): AdminSettings | undefined {
  const issuer = jwksUrl(env, 'ADMIN_ISSUER', 'https://login.example.com/realms/staff');
  if (issuer === undefined) return refuseWithout(env, 'ADMIN_', 'ADMIN_ISSUER', 'the admin API');
  const audience = text(env, 'ADMIN_AUDIENCE');
  if (audience === undefined) {
    throw new ConfigError('ADMIN_AUDIENCE', 'is required with ADMIN_ISSUER: the audience (aud) the provider puts in access tokens for this admin API, e.g. https://authz-admin.corp.example');
  }
  const adminPort = port(env, 'ADMIN_PORT');
  for (const [name, other] of [['GRPC_PORT', otherPorts.grpc], ['METRICS_PORT', otherPorts.metrics], ['PROBE_PORT', otherPorts.probes]] as const) {
    if (adminPort !== 0 && adminPort === other) throw new ConfigError('ADMIN_PORT', `must differ from ${name} (${other}): the admin API is never served on the Check, metrics or probe port`);
  }
  const rolesClaim = textOrDefault(env, 'ADMIN_ROLES_CLAIM');
  if (!CLAIM_NAME.test(rolesClaim)) throw new ConfigError('ADMIN_ROLES_CLAIM', 'expected a claim name or dotted path of at most 200 visible ASCII characters, such as roles or resource_access.sitekey-authz.roles');
  // A path with an empty member could only ever give everyone no role: every admin request a 403.
  if (rolesClaim.split('.').includes('')) throw new ConfigError('ADMIN_ROLES_CLAIM', `"${rolesClaim}" has an empty member between its dots; write the path as resource_access.sitekey-authz.roles`);
  const oidcClientId = text(env, 'ADMIN_OIDC_CLIENT_ID');
  if (oidcClientId !== undefined && !CLAIM_NAME.test(oidcClientId)) {
    throw new ConfigError('ADMIN_OIDC_CLIENT_ID', 'expected the client id the provider gave the console: at most 200 visible ASCII characters, no spaces');
  }
  const oidcClientSecret = text(env, 'ADMIN_OIDC_CLIENT_SECRET');
  // The secret is never quoted back: it would land in a log.
  if (oidcClientSecret !== undefined && oidcClientId === undefined) throw new ConfigError('ADMIN_OIDC_CLIENT_SECRET', 'is only read with ADMIN_OIDC_CLIENT_ID set, the client it belongs to');
  const publicUrl = jwksUrl(env, 'ADMIN_PUBLIC_URL', 'https://authz-admin.corp.example') ?? `http://127.0.0.1:${adminPort}`;
  const parsedPublicUrl = new URL(publicUrl);
  if (parsedPublicUrl.search !== '' || parsedPublicUrl.hash !== '' || parsedPublicUrl.username !== '' || parsedPublicUrl.password !== '') {
    throw new ConfigError('ADMIN_PUBLIC_URL', 'expected a base URL without query, fragment or credentials, such as https://authz-admin.corp.example');
  }
  const types = adminTokenTypes(env);
  // An ID token's aud is the client it was issued to: with the console's client id as the API's
  // audience, and a typ an ID token also carries accepted, a sign-in's ID token would pass as an access token.
  if (oidcClientId === audience && types.some((type) => type !== 'at+jwt')) {
    throw new ConfigError(
      'ADMIN_AUDIENCE',
      "equals ADMIN_OIDC_CLIENT_ID while ADMIN_TOKEN_TYPES accepts more than at+jwt: the console's ID tokens would pass as access tokens; register the API apart from the console at the provider and use its audience",
    );
  }
  return Object.freeze({
    issuer,
    audience,
    algorithms: Object.freeze(plainDefault('TOKEN_ALGORITHMS').split(',')),
    types: Object.freeze(types),
    clockSkewSeconds: Number(plainDefault('TOKEN_CLOCK_SKEW_SECONDS')),
    maxAgeSeconds: tokenMaxAge(env, 'ADMIN_TOKEN_MAX_AGE_SECONDS'),
    port: adminPort,
    rolesClaim,
    oidcClientId,
    oidcClientSecret,
    publicUrl: publicUrl.replace(/\/+$/, ''),
    xffTrustedHops: integer(env, 'ADMIN_XFF_TRUSTED_HOPS', 0, 64),
  });
}
