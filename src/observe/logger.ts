import { pino, type Logger } from 'pino';
import type { LogLevel } from '../config.js';

export type { Logger };

/** Where a credential may lie in a log object, at its top level or one level down. */
const CREDENTIAL_PATHS: readonly string[] = [
  // The Authorization header, in a headers object or a CheckInput, under either spelling.
  'authorization',
  'Authorization',
  'headers.authorization',
  'headers.Authorization',
  'input.authorization',
  // A request body carries siteid and apikey (spec, Authentication 4).
  'body',
  'input.body',
  // A CheckRequest as Envoy sends it: every header and the body.
  'attributes.request.http.headers',
  'attributes.request.http.header_map',
  'attributes.request.http.body',
  'attributes.request.http.raw_body',
  // Keys by name, and the database's secrets.
  'apiKey',
  'apikey',
  'submittedKey',
  'password',
  'databaseUrl',
  'databaseListenUrl',
];

/**
 * The fields under which a log line nests an object: the credential paths are censored under each.
 * They are named rather than written `*.path`: pino redacts paths that start with a wildcard on
 * every log line, whatever it holds, and a denial's line cost 42 µs instead of 6 µs with them (ad
 * hoc, 100,000 lines); a flood of denials spent most of its time there.
 */
const NESTING_FIELDS: readonly string[] = [
  'call',
  'checkRequest',
  'config',
  'database',
  'detail',
  'err',
  'error',
  'event',
  'header',
  'input',
  'issued',
  'options',
  'parsed',
  'req',
  'request',
  'response',
];

/**
 * Paths that may hold a credential anywhere a log object could carry one. Declared once so no call
 * site has to remember to scrub (pino validates the paths when the logger is built).
 */
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
