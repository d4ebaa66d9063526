#!/usr/bin/env node
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { canonicalApiKey, maskApiKeysIn } from '../decision/api-key.js';
import { createLogger, type Logger } from '../observe/logger.js';
import { AdminError, adminErrorText, CredentialAdmin } from '../store/credential-admin.js';
import { connectionPool, openDatabase } from '../store/database.js';
import { migrate } from '../store/migrate.js';
import { textOf } from '../operations/fields.js';
import { Refusal } from '../operations/refusal.js';
import { actorFor, runningAccount } from './actor.js';
import { UsageError } from './arguments.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, type Command, type CommandContext, type CommandLine } from './command.js';
import { COMMANDS } from './commands.js';
import { commandHelp, groupHelp, PROGRAM_HELP, usageLine, versionText } from './help.js';
import { printable, type CommandOutput } from './output.js';
import { refusalText } from './refusal-text.js';

const MAX_ACTOR = 100;
const GLOBAL_OPTIONS = {
  json: { type: 'boolean' },
  actor: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
} as const;

function findCommand(words: readonly string[]): Command | undefined {
  return COMMANDS.find((command) => command.name === words.slice(0, command.name.split(' ').length).join(' '));
}

function unknownCommand(words: readonly string[]): UsageError {
  const group = COMMANDS.filter((command) => command.name.startsWith(`${words[0]} `));
  if (words.length === 0) return new UsageError('no command given; try `sitekey-authz --help`');
  if (group.length > 0) {
    const verbs = group.map((command) => command.name).join(', ');
    return new UsageError(`"${words.slice(0, 2).join(' ')}" is not a command; "${words[0]}" takes one of: ${verbs}`);
  }
  return new UsageError(`"${words[0]}" is not a command; try one of: ${[...new Set(COMMANDS.map((c) => c.name.split(' ')[0]))].join(', ')} (or --help)`);
}

type Invocation =
  | ({ readonly command: Command } & CommandLine)
  | { readonly command: undefined; readonly text: string };

/** `--help` for what the words before the first flag name: everything, a group, or one command. */
function help(words: readonly string[]): Invocation {
  const firstFlag = words.findIndex((word) => word.startsWith('-'));
  const named = firstFlag < 0 ? words : words.slice(0, firstFlag);
  const command = findCommand(named);
  const text = named.length === 0 ? PROGRAM_HELP : command ? commandHelp(command) : named.length === 1 ? groupHelp(named[0] ?? '') : undefined;
  if (text === undefined) throw unknownCommand(named);
  return { command: undefined, text };
}

function parseCommandLine(argv: readonly string[]): Invocation {
  let firstWord = 0;
  while (argv[firstWord]?.startsWith('-')) firstWord += argv[firstWord] === '--actor' ? 2 : 1;
  const leadingFlags = argv.slice(0, firstWord);
  const words = argv.slice(leadingFlags.length);
  const command = findCommand(words);
  if (command === undefined) {
    if (words[0] === 'help') return help(words.slice(1));
    if (argv.some((arg) => arg === '--help' || arg === '-h')) return help(words);
    if (argv.some((arg) => arg === '--version' || arg === '-V')) return { command: undefined, text: versionText() };
    throw unknownCommand(words);
  }
  const rest = [...leadingFlags, ...words.slice(command.name.split(' ').length)];
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: { ...GLOBAL_OPTIONS, ...command.options }, strict: true, allowPositionals: true });
  } catch (error) {
    const code = (error as { code?: string }).code;
    const own = Object.keys(command.options).map((name) => `--${name}`);
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const offending = /'([^']+)'/.exec((error as Error).message)?.[1] ?? 'an option';
      // An issuer may make a client id that starts with a dash: after `--`, every word is an argument.
      const word = rest.find((arg) => arg.startsWith(offending)) ?? offending;
      const asArgument = command.synopsis.includes('<') ? ` If ${word} is an argument (a client id that starts with a dash), write -- before it: sitekey-authz ${command.name} -- ${word}` : '';
      throw new UsageError(`"${command.name}" has no option ${offending}; it takes ${[...own, '--json', '--actor'].join(', ')}. Usage: ${usageLine(command)}.${asArgument}`);
    }
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      // Node says which option lacks its value, and how to give one that starts with a dash: keep that hint.
      const option = /'(--[^' ]+)/.exec((error as Error).message)?.[1];
      const given = option === undefined ? undefined : rest[rest.indexOf(option) + 1];
      if (option !== undefined && given?.startsWith('-') === true && command.options[option.slice(2)]?.type === 'string') {
        throw new UsageError(`${option} reads ${given} as another option; to give a value that starts with a dash, write ${option}=${given}`);
      }
      throw new UsageError(`${(error as Error).message.split('\n').join(' ')}; usage: ${usageLine(command)}`);
    }
    throw error;
  }
  if (parsed.values.help === true) return { command: undefined, text: commandHelp(command) };
  if (parsed.values.version === true) return { command: undefined, text: versionText() };
  return { command, positionals: parsed.positionals, options: parsed.values as CommandLine['options'] };
}

function checkArity(command: Command, positionals: readonly string[]): void {
  const [min, max] = command.arity;
  if (positionals.length < min) {
    throw new UsageError(`"${command.name}" is missing arguments; usage: ${usageLine(command)}`);
  }
  if (positionals.length > max) {
    if (positionals.slice(max).some((arg) => canonicalApiKey(arg) !== undefined)) {
      throw new UsageError(
        `"${command.name}" takes no API key on the command line, where it would stay in shell history; usage: ${usageLine(command)}`,
      );
    }
    const extra = positionals.slice(max).map((arg) => `"${arg}"`).join(' ');
    const [firstOption] = Object.keys(command.options);
    const quoteHint = firstOption === undefined ? '' : ` (quote a value with spaces: --${firstOption} "…")`;
    throw new UsageError(`"${command.name}" does not take ${extra}${quoteHint}; usage: ${usageLine(command)}`);
  }
}

/** Piped in, or typed at a prompt (one line): the key for `key import`. */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) {
    process.stderr.write('Paste the API key and press Enter: ');
    const lines = createInterface({ input: process.stdin, terminal: false });
    for await (const line of lines) {
      lines.close();
      return line;
    }
    return '';
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function databaseSession(config: Config, logger: Logger): CommandContext['withPool'] {
  return async (work) => {
    const database = await openDatabase(config, logger, 'command');
    if (database.created) {
      process.stderr.write(
        `warning: created a new, empty embedded database in ${config.dataDir}; if serve runs with another DATA_DIR, ` +
          'run this from the directory serve was started in, or set DATA_DIR or DATABASE_URL\n',
      );
    }
    try {
      // The embedded database is ours to keep current, as `serve` does with MIGRATE_ON_START.
      if (database.embedded && config.migrateOnStart) await migrate(database.url);
      const pool = connectionPool(database.url, { applicationName: 'sitekey-authz-cli', max: 1, logger });
      try {
        return await work(pool);
      } finally {
        await pool.end();
      }
    } finally {
      await database.close();
    }
  };
}

// SQLSTATE classes 08 (connection), 28 (authentication), 3D (no such database), 57P (shutting down).
const DATABASE_UNREACHABLE = /^(08|28|3D|57P)/;
// pg and node-pg-migrate give a connection that never answered no code, only these words.
const TIMED_OUT = /connection timeout|timeout expired|Connection terminated unexpectedly/i;
const NETWORK_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', 'EAI_AGAIN']);

function describeFailure(error: unknown, command: Command | undefined) {
  if (error instanceof UsageError) return { exit: EXIT_USAGE, code: 'USAGE', message: error.message };
  if (error instanceof Refusal) return { exit: EXIT_USAGE, code: error.code, field: error.field, message: refusalText(error, command) };
  if (error instanceof ConfigError) return { exit: EXIT_USAGE, code: 'CONFIG', message: `configuration: ${error.message}` };
  if (error instanceof AdminError) return { exit: EXIT_FAILED, code: error.code, field: error.field, message: adminErrorText(error, 'cli') };
  const message = error instanceof Error ? error.message : `unexpected failure (${String(error)}); run again with LOG_LEVEL=debug for detail`;
  const code = (error as { code?: unknown } | null)?.code;
  const reachedNoServer = typeof code === 'string' ? NETWORK_ERRORS.has(code) || DATABASE_UNREACHABLE.test(code) : TIMED_OUT.test(message);
  if (reachedNoServer) {
    return { exit: EXIT_FAILED, code: 'DATABASE_UNAVAILABLE', message: `cannot use the database (${message}); check DATABASE_URL and that PostgreSQL is running` };
  }
  return { exit: EXIT_FAILED, code: 'FAILED', message };
}

/** --actor, else SITEKEY_ACTOR: checked as a note is, and masked (a UUID in it is no one's name). */
function namedActor(flag: string | undefined, setting: string | undefined): string | undefined {
  if (flag === undefined && setting === undefined) return undefined;
  let actor: string;
  try {
    actor = textOf(flag ?? setting, 'actor', MAX_ACTOR);
  } catch (error) {
    if (flag === undefined && error instanceof Refusal) throw new ConfigError('SITEKEY_ACTOR', error.message);
    throw error;
  }
  if (actor.trim() === '') throw new UsageError('--actor must name who makes the change, e.g. --actor alice@example.com');
  return actor;
}

function print(output: CommandOutput, json: boolean): void {
  for (const warning of output.warnings ?? []) process.stderr.write(`warning: ${printable(maskApiKeysIn(warning))}\n`);
  process.stdout.write(json ? `${JSON.stringify(output.json, null, 2)}\n` : `${printable(output.text)}\n`);
}

export async function main(argv: readonly string[]): Promise<number> {
  const json = argv.includes('--json');
  // `site list | head` closes the pipe early; that is the reader's choice, not a failure.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  let running: Command | undefined;
  try {
    const invocation = parseCommandLine(argv);
    if (invocation.command === undefined) {
      process.stdout.write(`${invocation.text}\n`);
      return EXIT_OK;
    }
    const { command, positionals, options } = invocation;
    running = command;
    checkArity(command, positionals);
    const config = loadConfig();
    const named = namedActor(typeof options.actor === 'string' ? options.actor : undefined, config.actor);
    // serve and issuer log JSON lines to stdout; the other commands keep stdout for their output, and say
    // only what went wrong on stderr unless LOG_LEVEL asks for debugging detail.
    const logger =
      command.name === 'serve' || command.name === 'issuer'
        ? createLogger(config.logLevel)
        : createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, process.stderr);
    const withPool = databaseSession(config, logger);
    const now = Date.now();
    const withOperations: CommandContext['withOperations'] = (work) => {
      const subject = actorFor(named, runningAccount(config.inKubernetesPod), command.changesNothing !== true);
      return withPool((pool) => work({ admin: new CredentialAdmin(pool, { kind: 'cli', subject }), config, now }));
    };
    const context: CommandContext = { config, env: process.env, logger, now, readStdin, withOperations, withPool };
    const output = await command.run(context, { positionals, options });
    if (output !== undefined) print(output, json);
    return output?.exitCode ?? EXIT_OK;
  } catch (error) {
    const described = describeFailure(error, running);
    // A key typed where it does not belong must not be echoed back in the message that says so.
    const message = maskApiKeysIn(described.message);
    const { code, field } = described;
    const text = json ? JSON.stringify({ error: { code, field, message } }) : `sitekey-authz: ${printable(message)}`;
    process.stderr.write(`${text}\n`);
    return running?.failureExit ?? described.exit;
  }
}

process.exitCode = await main(process.argv.slice(2));
