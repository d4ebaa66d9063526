import { pino, type Logger } from 'pino';
import type { LogLevel } from '../config.js';

export type { Logger };

/**
 * Paths that may hold a credential anywhere a log object could carry one. Declared once so no call
 * site has to remember to scrub (pino validates the paths when the logger is built).
 */
export const REDACTED_PATHS: readonly string[] = [
  // The Authorization header, in a headers object or a CheckInput, under either spelling.
  'authorization',
  'Authorization',
  'headers.authorization',
  'headers.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
  'request.headers.authorization',
  'input.authorization',
  '*.input.authorization',
  // A request body carries siteid and apikey (spec, Authentication 4).
  'body',
  '*.body',
  'input.body',
  '*.input.body',
  // A CheckRequest as Envoy sends it: every header and the body.
  'attributes.request.http.headers',
  'attributes.request.http.header_map',
  'attributes.request.http.body',
  'attributes.request.http.raw_body',
  '*.attributes.request.http.headers',
  '*.attributes.request.http.header_map',
  '*.attributes.request.http.body',
  '*.attributes.request.http.raw_body',
  // Keys by name, and the database's secrets.
  'apiKey',
  'apikey',
  '*.apiKey',
  '*.apikey',
  'submittedKey',
  '*.submittedKey',
  'password',
  '*.password',
  'databaseUrl',
  'databaseListenUrl',
  '*.databaseUrl',
  '*.databaseListenUrl',
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
