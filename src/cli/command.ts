import type pg from 'pg';
import type { Config, Env, Setting } from '../config.js';
import type { Logger } from '../observe/logger.js';
import type { OperationContext } from '../operations/operation-context.js';
import type { CommandOutput } from './output.js';

// What the command modules and the table of commands share, so that none of them imports another.

// `check` and `explain` report a verdict: 0 allowed, 1 denied, 2 no verdict (the RPC or the database failed).
// Every other command: 0 done, 1 refused or failed, 2 a wrong command line or configuration (nothing attempted).
export const EXIT_OK = 0;
export const EXIT_ALLOWED = 0;
export const EXIT_DENIED = 1;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_NO_VERDICT = 2;

export interface CommandContext {
  readonly config: Config;
  /** For a command with settings of its own (`issuer`: src/issuer/issuer-config.ts). */
  readonly env: Env;
  readonly logger: Logger;
  readonly now: number;
  readonly readStdin: () => Promise<string>;
  /** Opens the database (migrating an embedded one), runs `work` against it as the actor, and closes it again. */
  readonly withOperations: <T>(work: (context: OperationContext) => Promise<T>) => Promise<T>;
  /** The same, for `explain`, which reads the credential tables itself. */
  readonly withPool: <T>(work: (pool: pg.Pool) => Promise<T>) => Promise<T>;
}

export interface CommandLine {
  readonly positionals: readonly string[];
  readonly options: Readonly<Record<string, string | boolean | string[] | undefined>>;
}

export interface Command {
  readonly name: string;
  readonly synopsis: string;
  readonly summary: string;
  /** Beside the global --json, --actor and --help; by default those the synopsis writes. */
  readonly options: Readonly<Record<string, { readonly type: 'string' | 'boolean'; readonly multiple?: boolean }>>;
  /** It only reads, so it runs under any account; a change needs a name for the audit log (actor.ts). */
  readonly changesNothing?: true;
  /** How many positional arguments it takes, [min, max], as the synopsis writes them. */
  readonly arity: readonly [number, number];
  /** The exit status when it fails, if not 1 (`check` and `explain`: 2, since 1 means denied). */
  readonly failureExit?: number;
  /** For `--help`: each argument and option of the synopsis, with the rule its value must follow. */
  readonly rules?: Readonly<Record<string, string>>;
  readonly example?: string;
  readonly environment?: readonly Setting[];
  /** Resolves to what to print, or to undefined once a server (`serve`, `issuer`) has stopped. */
  run(context: CommandContext, line: CommandLine): Promise<CommandOutput | undefined>;
}

type Defaulted = 'synopsis' | 'options';
export type CommandSpec = Omit<Command, Defaulted | 'arity'> & Partial<Pick<Command, Defaulted>>;

/** `--name VALUE` takes a value, `--name` alone is a flag, and `...` after it may be repeated. */
export function optionsOf(synopsis: string): Command['options'] {
  const options: Record<string, Command['options'][string]> = {};
  for (const [, name = '', value, repeated] of synopsis.matchAll(/--([a-z-]+)( [A-Z][^\] |]*)?\]?( ?\.\.\.)?/g)) {
    const type = value === undefined ? 'boolean' : 'string';
    options[name] = repeated === undefined ? { type } : { type, multiple: true };
  }
  return options;
}

/** `<name>` is an argument, `<name>...` one or more, `[<name>]` an optional one, `both|tokens` one of the words. */
function arityOf(synopsis: string): Command['arity'] {
  const words = synopsis.split(' ');
  const required = words.filter((word) => /^(<[a-z-]+>(\.\.\.)?|[a-z]+(\|[a-z]+)+)$/.test(word)).length;
  const optional = words.filter((word) => /^\[<[a-z-]+>\]$/.test(word)).length;
  return [required, words.some((word) => /^<[a-z-]+>\.\.\.$/.test(word)) ? Infinity : required + optional];
}

export const withDefaults = (spec: CommandSpec): Command => {
  const synopsis = spec.synopsis ?? '';
  return { synopsis, options: optionsOf(synopsis), arity: arityOf(synopsis), ...spec };
};

export function option(line: CommandLine, name: string): string | undefined {
  const value = line.options[name];
  return typeof value === 'string' ? value : undefined;
}

export function options(line: CommandLine, name: string): string[] {
  const value = line.options[name];
  return Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
}

export function positional(line: CommandLine, index: number): string {
  return line.positionals[index] ?? '';
}

export const flag = (line: CommandLine, name: string): boolean => line.options[name] === true;
