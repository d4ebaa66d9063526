import { readFileSync } from 'node:fs';
import { ConfigError, integer, list, refuseWithout, text, url, type Env } from './env-values.js';
import { plainDefault } from './settings.js';

/** What an RFC 9068 JWT access token must satisfy, for partners' tokens and the admin port's alike. */
export interface AccessTokenRules {
  readonly issuer: string;
  readonly audience: string;
  readonly algorithms: readonly string[];
  /** Lower case, without the `application/` prefix. */
  readonly types: readonly string[];
  readonly clockSkewSeconds: number;
  /** Also the longest a token is kept verified. */
  readonly maxAgeSeconds: number;
}

export interface TokenSettings extends AccessTokenRules {
  /** Undefined: named by TOKEN_ISSUER's discovery document. */
  readonly jwksUrl: string | undefined;
  /** Not enumerable, so that no dump of the configuration prints it. */
  readonly registrationToken?: string;
}

// Asymmetric only: with HMAC the issuer's public key could serve as the secret, and `none` signs nothing.
const TOKEN_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
const LOOPBACK_HOSTS = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

function tokenAlgorithms(env: Env): string[] {
  const algorithms = list(env, 'TOKEN_ALGORITHMS');
  for (const algorithm of algorithms) {
    if (/^(none|HS\d+)$/i.test(algorithm)) {
      throw new ConfigError('TOKEN_ALGORITHMS', `${algorithm} is never accepted: a token must be signed with the issuer's private key; use e.g. ${plainDefault('TOKEN_ALGORITHMS')}`);
    }
    if (!TOKEN_ALGORITHMS.includes(algorithm)) throw new ConfigError('TOKEN_ALGORITHMS', `"${algorithm}" is not one of ${TOKEN_ALGORITHMS.join(', ')}`);
  }
  return algorithms;
}

/** In a list of accepted types: a token without a typ header. */
export const NO_TOKEN_TYPE = 'none';

/** A media type as RFC 9068 §4 compares typ: without case and without the `application/` prefix. */
export function normalizedTokenType(type: string): string {
  const lower = type.toLowerCase();
  return lower.startsWith('application/') ? lower.slice('application/'.length) : lower;
}

/** May a URL be fetched for keys or trusted as an issuer: https, or http to a loopback address only. */
export function isSecureOrLoopbackUrl(value: unknown): boolean {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const parsed = new URL(value);
  return parsed.protocol === 'https:' || (parsed.protocol === 'http:' && LOOPBACK_HOSTS.test(parsed.hostname));
}

export function jwksUrl(env: Env, name: string, example = 'https://login.example.com/.well-known/jwks.json'): string | undefined {
  const value = url(env, name, { schemes: ['https:', 'http:'], said: 'an https://', example });
  if (value !== undefined && !isSecureOrLoopbackUrl(value)) {
    throw new ConfigError(name, 'must be https:// (http:// only to a loopback address such as 127.0.0.1, for tests)');
  }
  return value;
}

const RESOURCE_MAX_CHARS = 512;
const RESOURCE_TEXT = new RegExp(`^[\\x21\\x23-\\x5b\\x5d-\\x7e]{1,${RESOURCE_MAX_CHARS}}$`);

/** Thirty days: a longer bound is no bound on a leaked token. */
const TOKEN_MAX_AGE_LIMIT_SECONDS = 2_592_000;

export const tokenMaxAge = (env: Env, name: 'TOKEN_MAX_AGE_SECONDS' | 'ADMIN_TOKEN_MAX_AGE_SECONDS'): number =>
  integer(env, name, 60, TOKEN_MAX_AGE_LIMIT_SECONDS);

export function tokenSettings(env: Env): TokenSettings | undefined {
  const issuer = text(env, 'TOKEN_ISSUER');
  if (issuer === undefined) return refuseWithout(env, 'TOKEN_', 'TOKEN_ISSUER', 'token-based authentication');
  const audience = text(env, 'TOKEN_AUDIENCE');
  if (audience === undefined) throw new ConfigError('TOKEN_AUDIENCE', 'is required with TOKEN_ISSUER: the audience (aud) tokens for this API carry, e.g. https://partner-api.example.com');
  // Partners are told to request resource=<TOKEN_AUDIENCE> in JSON and in WWW-Authenticate (RFC 6750 §3).
  if (!RESOURCE_TEXT.test(audience)) {
    throw new ConfigError('TOKEN_AUDIENCE', `must be printable ASCII without spaces, quotes or backslashes, at most ${RESOURCE_MAX_CHARS} characters: the resource URI partners request tokens for, e.g. https://partner-api.example.com`);
  }
  const keys = jwksUrl(env, 'TOKEN_JWKS_URL');
  if (keys === undefined && !isSecureOrLoopbackUrl(issuer)) {
    throw new ConfigError(
      'TOKEN_ISSUER',
      "is not an https:// URL (http:// only to a loopback address), so its discovery document cannot be read for the signing keys: set TOKEN_JWKS_URL to the issuer's jwks_uri",
    );
  }
  const types = list(env, 'TOKEN_TYPES').map(normalizedTokenType);
  const settings = {
    issuer,
    audience,
    jwksUrl: keys,
    algorithms: Object.freeze(tokenAlgorithms(env)),
    types: Object.freeze(types),
    clockSkewSeconds: integer(env, 'TOKEN_CLOCK_SKEW_SECONDS', 0, 300),
    maxAgeSeconds: tokenMaxAge(env, 'TOKEN_MAX_AGE_SECONDS'),
  };
  Object.defineProperty(settings, 'registrationToken', { value: registrationToken(env), enumerable: false });
  return Object.freeze(settings as TokenSettings);
}

// An initial access token is a bearer string (RFC 6750 b64token, as issuers write them); a file's
// trailing newline is not part of it. The token is never quoted back: it would land in a log.
const REGISTRATION_TOKEN = /^[\x21-\x7e]{16,4096}$/;

function registrationToken(env: Env): string | undefined {
  const value = text(env, 'TOKEN_REGISTRATION_TOKEN');
  const file = text(env, 'TOKEN_REGISTRATION_TOKEN_FILE');
  if (value !== undefined && file !== undefined) {
    throw new ConfigError('TOKEN_REGISTRATION_TOKEN_FILE', 'is set together with TOKEN_REGISTRATION_TOKEN: set one of them, the file for a mounted Secret');
  }
  let token = value;
  if (file !== undefined) {
    try {
      token = readFileSync(file, 'utf8').trim();
    } catch (error) {
      throw new ConfigError('TOKEN_REGISTRATION_TOKEN_FILE', `cannot read ${JSON.stringify(file)}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
  }
  if (token !== undefined && !REGISTRATION_TOKEN.test(token)) {
    const from = file === undefined ? 'TOKEN_REGISTRATION_TOKEN' : 'TOKEN_REGISTRATION_TOKEN_FILE';
    throw new ConfigError(from, "expected the issuer's initial access token: 16 to 4096 visible ASCII characters, no spaces");
  }
  return token;
}
