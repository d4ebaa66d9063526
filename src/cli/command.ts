import type pg from 'pg';
import type { Config, Env, Setting } from '../config.js';
import type { Logger } from '../observe/logger.js';
import type { OperationContext } from '../operations/operation-context.js';
import type { CredentialAdmin } from '../store/credential-admin.js';
import type { CommandOutput } from './output.js';

// What the command modules and the table of commands share, so that none of them imports another.

export interface CommandContext {
  readonly config: Config;
  /** For a command with settings of its own (`issuer`: src/issuer/issuer-config.ts). */
  readonly env: Env;
  readonly logger: Logger;
  /** Epoch ms when the command started. */
  readonly now: number;
  readonly readStdin: () => Promise<string>;
  /** Opens the database (migrating an embedded one), runs `work` against it, and closes it again. */
  readonly withAdmin: <T>(work: (admin: CredentialAdmin) => Promise<T>) => Promise<T>;
  /** The same, as the operations take it: every change a person makes goes through them. */
  readonly withOperations: <T>(work: (context: OperationContext) => Promise<T>) => Promise<T>;
  /** The same, for `explain`, which reads the credential tables itself. */
  readonly withPool: <T>(work: (pool: pg.Pool) => Promise<T>) => Promise<T>;
}

export interface CommandLine {
  readonly positionals: readonly string[];
  readonly options: Readonly<Record<string, string | boolean | string[] | undefined>>;
}

export interface Command {
  /** `serve`, or a group and a verb such as `site add`. */
  readonly name: string;
  readonly synopsis: string;
  readonly summary: string;
  /** Beside the global --json, --actor and --help. */
  readonly options: Readonly<Record<string, { readonly type: 'string' | 'boolean'; readonly multiple?: boolean }>>;
  /** It only reads, so it runs under any account; a change needs a name for the audit log (actor.ts). */
  readonly changesNothing?: true;
  /** How many positional arguments it takes: [min, max]. */
  readonly arity: readonly [number, number];
  /** The exit status when it fails, if not 1 (`check` and `explain`: 2, since 1 means denied). */
  readonly failureExit?: number;
  /** For `--help`: each argument and option of the synopsis, with the rule its value must follow. */
  readonly rules?: Readonly<Record<string, string>>;
  readonly example?: string;
  /** For `--help`: the environment variables it reads. */
  readonly environment?: readonly Setting[];
  /** Resolves to what to print, or to undefined once a server (`serve`, `issuer`) has stopped. */
  run(context: CommandContext, line: CommandLine): Promise<CommandOutput | undefined>;
}

/** A command as its module writes it: without a synopsis, options or arguments when it takes none. */
type Defaulted = 'synopsis' | 'options' | 'arity';
export type CommandSpec = Omit<Command, Defaulted> & Partial<Pick<Command, Defaulted>>;

export const withDefaults = (spec: CommandSpec): Command => ({ synopsis: '', options: {}, arity: [0, 0], ...spec });

export function option(line: CommandLine, name: string): string | undefined {
  const value = line.options[name];
  return typeof value === 'string' ? value : undefined;
}

/** Every value of a repeatable string option, in the order given. */
export function options(line: CommandLine, name: string): string[] {
  const value = line.options[name];
  return Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
}

/** The positional argument at `index`, '' when missing (its parser says what was expected). */
export function positional(line: CommandLine, index: number): string {
  return line.positionals[index] ?? '';
}

export const flag = (line: CommandLine, name: string): boolean => line.options[name] === true;
