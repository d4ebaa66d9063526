import { guideUrlProblem, parseInstant } from '../common/sunset-values.js';
import { ConfigError, text, textOrDefault, type Env } from './env-values.js';
import { plainDefault } from './settings.js';

export const SUNSET_VARIABLES = ['APIKEY_SUNSET_AT', 'APIKEY_SUNSET_ENFORCE', 'MIGRATION_GUIDE_URL', 'APIKEY_DEPRECATED_AT'] as const;
export type SunsetVariable = (typeof SUNSET_VARIABLES)[number];

/** With an explicit zone: a deadline must not depend on the server's time zone. */
function instant(env: Env, name: string, fallback: string): number {
  const value = text(env, name) ?? fallback;
  const at = parseInstant(value, { dateAlone: false });
  if (at === undefined) {
    throw new ConfigError(name, `expected an ISO 8601 date-time with a zone, on a day the calendar has, such as ${plainDefault('APIKEY_SUNSET_AT')}, got "${value}"`);
  }
  return at;
}

export function guideUrl(env: Env, name: string): string | undefined {
  const value = text(env, name);
  const problem = value === undefined ? undefined : guideUrlProblem(value);
  if (problem !== undefined) throw new ConfigError(name, problem);
  return value;
}

export function sunsetDates(env: Env): { apiKeySunsetAt: number; apiKeyDeprecatedAt: number } {
  const sunsetAt = textOrDefault(env, 'APIKEY_SUNSET_AT');
  const apiKeySunsetAt = instant(env, 'APIKEY_SUNSET_AT', sunsetAt);
  const apiKeyDeprecatedAt = instant(env, 'APIKEY_DEPRECATED_AT', sunsetAt);
  if (apiKeyDeprecatedAt > apiKeySunsetAt) {
    throw new ConfigError('APIKEY_DEPRECATED_AT', 'must not be later than APIKEY_SUNSET_AT: RFC 9745 does not let the sunset precede the deprecation');
  }
  return { apiKeySunsetAt, apiKeyDeprecatedAt };
}
