import { pino, type Logger } from 'pino';
import type { LogLevel } from '../config.js';

export type { Logger };

/** Where a credential may lie in a log object, at its top level or one level down. */
const CREDENTIAL_PATHS: readonly string[] = [
  'authorization',
  'Authorization',
  'headers.authorization',
  'headers.Authorization',
  'input.authorization',
  // A request body carries siteid and apikey (spec, Authentication 4).
  'body',
  'input.body',
  // A CheckRequest as Envoy sends it.
  'attributes.request.http.headers',
  'attributes.request.http.header_map',
  'attributes.request.http.body',
  'attributes.request.http.raw_body',
  'apiKey',
  'apikey',
  'submittedKey',
  'password',
  'databaseUrl',
  'databaseListenUrl',
];

// Named rather than `*.path`: pino redacts a wildcard-first path on every line (a denial's: 42 µs instead of 6 µs).
const NESTING_FIELDS: readonly string[] = [
  'call', 'checkRequest', 'config', 'database', 'detail', 'err', 'error', 'event',
  'header', 'input', 'issued', 'options', 'parsed', 'req', 'request', 'response',
];

/** Declared once so that no call site has to remember to scrub. */
export const REDACTED_PATHS: readonly string[] = [
  ...new Set([...CREDENTIAL_PATHS, ...NESTING_FIELDS.flatMap((field) => CREDENTIAL_PATHS.map((path) => `${field}.${path}`))]),
];

export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    base: { service: 'sitekey-authz' },
    redact: { paths: [...REDACTED_PATHS], censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(options, destination as pino.DestinationStream) : pino(options);
}
