import { Writable } from 'node:stream';
import type { LogLevel } from '../../src/config.js';
import { createLogger, type Logger } from '../../src/observe/logger.js';

/** A logger at `level` whose lines a test reads back, parsed, in the order they were written. */
export function loggedLines(level: LogLevel): { readonly lines: Array<Record<string, unknown>>; readonly logger: Logger } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger(level, sink) };
}
