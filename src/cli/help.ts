import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultText, type Setting } from '../config.js';
import { PACKAGE_ROOT } from '../paths.js';
import type { Command } from './command.js';
import { COMMANDS } from './commands.js';

const WIDTH = 100;
const RULE_INDENT = 6;

export const usageLine = (command: Command) => `sitekey-authz ${command.name}${command.synopsis ? ` ${command.synopsis}` : ''}`;

function wrap(text: string, indent: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && indent + line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  lines.push(line);
  return lines.map((part) => `${' '.repeat(indent)}${part}`).join('\n');
}

/** A heading, then each term with its meaning wrapped on the lines below it; nothing without terms. */
function section(heading: string, terms: ReadonlyArray<readonly [string, string]>): string[] {
  if (terms.length === 0) return [];
  return ['', heading, ...terms.map(([term, meaning]) => `  ${term}\n${wrap(meaning, RULE_INDENT)}`)];
}

/** Each argument or option with its rule; a rule several commands share is said once. */
function rules(commands: readonly Command[]): string[] {
  const entries = commands.flatMap((command) => Object.entries(command.rules ?? {}));
  const said = new Map(entries.map((entry) => [entry.join('\n'), entry] as const));
  return section('Arguments and options:', [...said.values()]);
}

function environment(command: Command): string[] {
  const heading = 'Settings (environment variables; a bad value stops start-up naming the variable and why):';
  const term = (setting: Setting) => `${setting.name}  (default: ${defaultText(setting)})`;
  return section(heading, (command.environment ?? []).map((setting) => [term(setting), setting.meaning] as const));
}

function examples(commands: readonly Command[]): string[] {
  const lines = commands.flatMap((command) => (command.example === undefined ? [] : [`  ${command.example}`]));
  return lines.length === 0 ? [] : ['', lines.length === 1 ? 'Example:' : 'Examples:', ...lines];
}

const GLOBAL_OPTIONS_LINE = 'Global options: --json, --actor NAME (see `sitekey-authz --help`).';

export function commandHelp(command: Command): string {
  return [`Usage: ${usageLine(command)}`, wrap(command.summary, 2), ...rules([command]), ...environment(command), ...examples([command]), '', GLOBAL_OPTIONS_LINE].join('\n');
}

export function groupHelp(group: string): string | undefined {
  const commands = COMMANDS.filter((command) => command.name.startsWith(`${group} `));
  if (commands.length === 0) return undefined;
  return [
    `Usage: sitekey-authz ${group} <command> [arguments]`,
    ...section('Commands:', commands.map((command) => [usageLine(command), command.summary] as const)),
    ...rules(commands),
    ...examples(commands),
    '',
    `A command's own help: sitekey-authz ${commands[0]?.name ?? group} --help. ${GLOBAL_OPTIONS_LINE}`,
  ].join('\n');
}

export const PROGRAM_HELP = [
  'Usage: sitekey-authz <command> [arguments] [--json] [--actor NAME]',
  '',
  'Commands:',
  ...COMMANDS.map((command) => `  ${usageLine(command).slice('sitekey-authz '.length)}\n      ${command.summary}`),
  '',
  'Global options:',
  '  --json          machine-readable output on stdout (errors as {"error":{"code","message"}} on stderr)',
  '  --actor NAME    who makes the change, for the audit log (default: SITEKEY_ACTOR, else the OS user; needed as root or in a pod)',
  '  --help, -h      this text; after a group or a command, its commands or its rules and an example:',
  '                  sitekey-authz key --help, sitekey-authz key issue --help',
  '  --version, -V   the version of sitekey-authz',
  '',
  'Every command works against DATABASE_URL or, when it is unset, the embedded PostgreSQL in DATA_DIR.',
  'Exit status: 0 done, 1 refused or failed, 2 bad arguments or configuration.',
].join('\n');

export function versionText(): string {
  const { version } = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };
  return `sitekey-authz ${version}`;
}
