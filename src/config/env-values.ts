import { plainDefault, SETTINGS } from './settings.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** Start-up stops with this message. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`${variable}: ${reason}`);
    this.name = 'ConfigError';
  }
}

export function text(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

export function textOrDefault(env: Env, name: string): string {
  return text(env, name) ?? plainDefault(name);
}

export function integer(env: Env, name: string, min: number, max: number): number {
  const value = textOrDefault(env, name);
  if (!/^\d+$/.test(value)) throw new ConfigError(name, `expected a whole number from ${min} to ${max}, got "${value}"`);
  const parsed = Number(value);
  if (parsed < min || parsed > max) throw new ConfigError(name, `expected a whole number from ${min} to ${max}, got ${value}`);
  return parsed;
}

/** A share from 0 to 1, written as a decimal (0.01, not 1% or 1e-2). */
export function fraction(env: Env, name: string): number {
  const value = textOrDefault(env, name);
  const parsed = /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
  if (!(parsed >= 0 && parsed <= 1)) throw new ConfigError(name, `expected a decimal from 0 to 1, such as 0.01, got "${value}"`);
  return parsed;
}

export function port(env: Env, name: string): number {
  return integer(env, name, 0, 65535);
}

/** `whenUnset` for a setting whose default is worked out, not a value of SETTINGS. */
export function boolean(env: Env, name: string, whenUnset?: boolean): boolean {
  const value = (text(env, name) ?? (whenUnset === undefined ? plainDefault(name) : String(whenUnset))).toLowerCase();
  if (value === 'true' || value === '1' || value === 'yes') return true;
  if (value === 'false' || value === '0' || value === 'no') return false;
  throw new ConfigError(name, `expected true or false, got "${value}"`);
}

/** The value is never quoted back: a database URL holds a password. */
export function url(env: Env, name: string, kind: { readonly schemes: readonly string[]; readonly said: string; readonly example: string }): string | undefined {
  const value = text(env, name);
  if (value === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(name, `expected ${kind.said} URL such as ${kind.example}`);
  }
  if (!kind.schemes.includes(parsed.protocol)) throw new ConfigError(name, `expected ${kind.said} URL, got the scheme "${parsed.protocol}"`);
  return value;
}

export function postgresUrl(env: Env, name: string): string | undefined {
  return url(env, name, { schemes: ['postgres:', 'postgresql:'], said: 'a postgres:// or postgresql://', example: 'postgres://user:password@host:5432/database' });
}

/** Refuses the settings starting with `prefix` that mean something only with `switchedOnBy` set. */
export function refuseWithout(env: Env, prefix: string, switchedOnBy: string, what: string): undefined {
  for (const { name } of SETTINGS.filter((setting) => setting.name.startsWith(prefix) && setting.name !== switchedOnBy)) {
    if (text(env, name) !== undefined) throw new ConfigError(name, `is only read with ${switchedOnBy} set: set ${switchedOnBy} to turn ${what} on`);
  }
  return undefined;
}

export function list(env: Env, name: string): string[] {
  const items = textOrDefault(env, name).split(',').map((item) => item.trim());
  if (items.some((item) => item === '')) throw new ConfigError(name, `expected a comma-separated list such as ${plainDefault(name)}, got an empty item`);
  return items;
}
