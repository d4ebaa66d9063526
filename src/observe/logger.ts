import { pino, type Logger } from 'pino';
import type { LogLevel } from '../config.js';

export type { Logger };

/**
 * Paths that may hold a credential anywhere a log object could carry one. Declared once so no call
 * site has to remember to scrub (pino validates the paths when the logger is built).
 */
export const REDACTED_PATHS: readonly string[] = [
  'authorization',
  'headers.authorization',
  '*.headers.authorization',
  'request.headers.authorization',
  'apiKey',
  'apikey',
  '*.apiKey',
  '*.apikey',
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
