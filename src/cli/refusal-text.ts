import { subjectOf, type Refusal } from '../operations/refusal.js';
import type { Command } from './command.js';

/** A field's argument or option; of several spellings, the first the command's synopsis uses. */
const ARGUMENTS: Readonly<Record<string, readonly string[]>> = {
  siteId: ['<site>', '<site-id>', '<id>'], id: ['<id>'], sites: ['--site'], site: ['--site'],
  keyId: ['<key-id>'], key: ['standard input'], clientId: ['<client-id>'], jwks: ['--jwks-file'],
  entries: ['<cidr>'], entry: ['<cidr>'], allowAnyAddress: ['--allow-any-address'],
  method: ['both|tokens'], brownoutId: ['<id>'],
};

const kebab = (field: string) => field.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);

export function fieldFlag(field: string, command: Pick<Command, 'synopsis'> | undefined): string {
  const spellings = ARGUMENTS[field] ?? [`--${kebab(field)}`];
  return spellings.find((spelling) => command?.synopsis.includes(spelling) === true) ?? spellings[0] ?? field;
}

/** "--expires: 2020-01-01 is in the past; …, e.g. --expires 2027-01-31": the refusal in what to type. */
export function refusalText(refusal: Refusal, command: Pick<Command, 'synopsis'> | undefined): string {
  if (refusal.field === undefined) return refusal.message;
  const flag = fieldFlag(refusal.field, command);
  const typed = (example: string) => (flag.startsWith('--') ? `${flag} ${example}` : example);
  const example = refusal.example === undefined ? '' : `, e.g. ${refusal.example.split(' or ').map(typed).join(' or ')}`;
  const confirm = refusal.confirmedBy === undefined ? '' : `; to go ahead all the same, add ${fieldFlag(refusal.confirmedBy, command)}`;
  return `${subjectOf(flag, refusal.problem)}${refusal.problem}${example}${confirm}`;
}
