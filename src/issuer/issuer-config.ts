import { readFileSync } from 'node:fs';
import { ConfigError, integer, isSecureOrLoopbackUrl, port, SETTINGS, text, type Env, type Setting } from '../config.js';
import { TRIAL_RESOURCE } from '../config/settings.js';

/** The settings of `sitekey-authz issuer` (the ISSUER_* rows of SETTINGS); a bad one stops start-up. */
export interface IssuerSettings {
  readonly port: number;
  /** Undefined: http://127.0.0.1:<the port listened on>, for trying out. */
  readonly url: string | undefined;
  readonly resource: string;
  /** Undefined on loopback when none was set: the trial token kept in the database. */
  readonly registrationToken: string | undefined;
  readonly tokenTtlSeconds: number;
}

/** A day: the signing keys stay published longer than this after they stop signing (signing-keys.ts). */
export const MAX_TOKEN_TTL_SECONDS = 86_400;
const MIN_TOKEN_TTL_SECONDS = 60;
const MIN_REGISTRATION_TOKEN = 32;
const MAX_REGISTRATION_TOKEN = 1_024;
// RFC 6750 §2.1's b64token: what a Bearer header can carry.
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** What `sitekey-authz issuer --help` lists. */
export const ISSUER_ENVIRONMENT: readonly Setting[] = SETTINGS.filter(
  (setting) => setting.name.startsWith('ISSUER_') || ['DATABASE_URL', 'DATA_DIR', 'MIGRATE_ON_START', 'BIND_ADDRESS', 'LOG_LEVEL', 'CLIENT_IP_SOURCE', 'XFF_TRUSTED_HOPS'].includes(setting.name),
);

function parsedUrl(value: string, name: string, expected: string): URL {
  try {
    return new URL(value);
  } catch {
    throw new ConfigError(name, `expected ${expected}`);
  }
}

function issuerUrl(env: Env): string | undefined {
  const value = text(env, 'ISSUER_URL');
  if (value === undefined) return undefined;
  const parsed = parsedUrl(value, 'ISSUER_URL', 'an https:// origin such as https://auth.partner-api.example.com');
  if (!['https:', 'http:'].includes(parsed.protocol) || !isSecureOrLoopbackUrl(value)) {
    throw new ConfigError('ISSUER_URL', 'must be https:// (http:// only to a loopback address such as 127.0.0.1, for trying out)');
  }
  if (parsed.pathname !== '/' || parsed.search !== '' || parsed.hash !== '' || parsed.username !== '' || parsed.password !== '') {
    throw new ConfigError('ISSUER_URL', `expected an origin without path, query or credentials, such as ${parsed.protocol}//${parsed.host}`);
  }
  return parsed.origin;
}

/** RFC 8707 §2: an absolute URI without a fragment. */
function resource(env: Env, onLoopback: boolean): string {
  const value = text(env, 'ISSUER_RESOURCE');
  if (value === undefined) {
    if (onLoopback) return TRIAL_RESOURCE;
    throw new ConfigError('ISSUER_RESOURCE', "is required with an ISSUER_URL off loopback: the partner API's audience, the TOKEN_AUDIENCE serve is given, e.g. https://partner-api.example.com");
  }
  const parsed = parsedUrl(value, 'ISSUER_RESOURCE', 'an absolute URI such as https://partner-api.example.com');
  if (parsed.hash !== '' || value.includes('#')) throw new ConfigError('ISSUER_RESOURCE', 'must not have a fragment (#...): RFC 8707 resource indicators have none');
  return value;
}

/** What an initial access token must be, set or kept: one a Bearer header carries, long enough not to be guessed. */
export function isRegistrationToken(token: string): boolean {
  return token.length >= MIN_REGISTRATION_TOKEN && token.length <= MAX_REGISTRATION_TOKEN && BEARER_TOKEN.test(token);
}

/** From the variable or from its _FILE; never quoted back in a message. */
function registrationToken(env: Env, onLoopback: boolean, readFile: (path: string) => string): string | undefined {
  const inline = text(env, 'ISSUER_REGISTRATION_TOKEN');
  const file = text(env, 'ISSUER_REGISTRATION_TOKEN_FILE');
  if (inline !== undefined && file !== undefined) throw new ConfigError('ISSUER_REGISTRATION_TOKEN_FILE', 'set it or ISSUER_REGISTRATION_TOKEN, not both');
  let name = 'ISSUER_REGISTRATION_TOKEN';
  let token = inline;
  if (file !== undefined) {
    name = 'ISSUER_REGISTRATION_TOKEN_FILE';
    try {
      token = readFile(file).trim();
    } catch (error) {
      throw new ConfigError(name, `cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'unreadable'}): mount the Secret there, or fix the path`);
    }
  }
  if (token === undefined) {
    if (onLoopback) return undefined;
    throw new ConfigError(
      'ISSUER_REGISTRATION_TOKEN',
      'is required (or ISSUER_REGISTRATION_TOKEN_FILE): the initial access token client registration asks for; make one with `openssl rand -base64 32` and give the same to serve as TOKEN_REGISTRATION_TOKEN',
    );
  }
  if (!isRegistrationToken(token)) {
    throw new ConfigError(
      name,
      `expected a token of ${MIN_REGISTRATION_TOKEN} to ${MAX_REGISTRATION_TOKEN} characters of A-Z a-z 0-9 - . _ ~ + / (then = padding), such as the output of \`openssl rand -base64 32\``,
    );
  }
  return token;
}

export function loadIssuerConfig(env: Env, readFile: (path: string) => string = (path) => readFileSync(path, 'utf8')): IssuerSettings {
  const url = issuerUrl(env);
  const onLoopback = url === undefined || new URL(url).protocol === 'http:';
  return Object.freeze({
    port: port(env, 'ISSUER_PORT'),
    url,
    resource: resource(env, onLoopback),
    registrationToken: registrationToken(env, onLoopback, readFile),
    tokenTtlSeconds: integer(env, 'ISSUER_TOKEN_TTL_SECONDS', MIN_TOKEN_TTL_SECONDS, MAX_TOKEN_TTL_SECONDS),
  });
}
