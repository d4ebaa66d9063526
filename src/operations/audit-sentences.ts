import { actorText, type RecordedActor } from '../store/audit-actor.js';
import type { AuditEntry } from '../store/audit-log.js';
import { instantWords } from './time-words.js';

/** The details of an entry as recorded: any JSON, even written by hand, so every field is read with care. */
type Details = Readonly<Record<string, unknown>>;

const detailsOf = (entry: AuditEntry): Details =>
  typeof entry.details === 'object' && entry.details !== null && !Array.isArray(entry.details) ? (entry.details as Details) : {};

const textOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined);
const partOf = (value: unknown, field: string): unknown => (typeof value === 'object' && value !== null ? (value as Details)[field] : undefined);

const METHOD_WORDS: Readonly<Record<string, string>> = { both: 'API keys and tokens', tokens: 'tokens only' };
const methodWords = (value: unknown): string => METHOD_WORDS[textOf(value) ?? ''] ?? String(textOf(value) ?? 'an unknown method');
const dateWords = (value: unknown): string => (textOf(value) === undefined ? 'an unknown date' : instantWords(textOf(value) as string));
const listWords = (value: unknown): string => (Array.isArray(value) ? value.map((item) => textOf(item) ?? '?').join(', ') : '');

/** "site 1001 (Acme)", or "site 1001" once the site is gone. */
const siteWords = (entry: AuditEntry): string =>
  entry.siteId === null ? 'no site' : `site ${entry.siteId}${entry.siteName === null || entry.siteName === '' ? '' : ` (${entry.siteName})`}`;

/** "(from X to Y)" when the entry recorded both sides of a field; '' for rows that did not. */
function beforeAfter(details: Details, field: string, words: (value: unknown) => string): string {
  const before = partOf(details['before'], field);
  const after = partOf(details['after'], field);
  if (before === undefined || after === undefined) return '';
  return ` (from ${words(before)} to ${words(after)})`;
}

function keyWords(details: Details): string {
  const id = textOf(details['keyId']);
  const masked = textOf(details['maskedKey']);
  return `key ${id ?? '?'}${masked === undefined ? '' : ` (${masked})`}`;
}

function policyWords(policy: unknown): string {
  const enforced = partOf(policy, 'enforce') === true ? 'enforced' : 'not enforced';
  const guide = textOf(partOf(policy, 'guideUrl'));
  return `${dateWords(partOf(policy, 'sunsetAt'))}, ${enforced}, ${guide === undefined ? 'no migration guide' : `guide ${guide}`}`;
}

function brownoutWords(details: Details): string {
  const sites = details['siteIds'];
  const whom = Array.isArray(sites) ? `site${sites.length === 1 ? '' : 's'} ${listWords(sites)}` : 'every site';
  const dry = details['dryRun'] === true ? ' (dry run: it counts, refuses nobody)' : '';
  return `brownout ${textOf(details['brownoutId']) ?? '?'} for ${whom} from ${dateWords(details['from'])} until ${dateWords(details['until'])}${dry}`;
}

/** What the actor did, for each action the trail records; the default names the action as it is. */
function deed(entry: AuditEntry, details: Details): string {
  const site = siteWords(entry);
  const client = `token client ${textOf(details['clientId']) ?? '?'}`;
  const entries = (value: unknown): string => (value === 1 ? '1 entry' : `${textOf(value) ?? '?'} entries`);
  switch (entry.action) {
    case 'site.add':
      return `added ${site}`;
    case 'site.enable':
      return `enabled ${site}${beforeAfter(details, 'enabled', (value) => (value === true ? 'enabled' : 'disabled'))}`;
    case 'site.disable':
      return `disabled ${site}${beforeAfter(details, 'enabled', (value) => (value === true ? 'enabled' : 'disabled'))}`;
    case 'site.auth':
      return details['previous'] === undefined
        ? `switched ${site} to ${methodWords(details['authMethod'])}`
        : `switched ${site} from ${methodWords(details['previous'])} to ${methodWords(details['authMethod'])}`;
    case 'site.grace':
      return `gave ${site} a grace for API keys until ${dateWords(details['graceUntil'])} (before: ${details['previous'] ? `until ${dateWords(details['previous'])}` : 'none'})`;
    case 'site.grace.clear':
      return `ended ${site}'s grace for API keys (before: ${details['previous'] ? `until ${dateWords(details['previous'])}` : 'none'})`;
    case 'site.revoke-tokens': {
      const before = partOf(details['before'], 'tokensNotBefore');
      const earlier = details['before'] === undefined ? '' : ` (before: ${before ? `those issued before ${dateWords(before)}` : 'none revoked'})`;
      return `revoked ${site}'s access tokens issued before ${dateWords(details['tokensNotBefore'])}${earlier}`;
    }
    case 'key.issue':
    case 'key.import': {
      const expires = details['expiresAt'] ? `until ${dateWords(details['expiresAt'])}` : 'without expiry';
      return `${entry.action === 'key.issue' ? 'issued' : 'imported'} ${keyWords(details)} for ${site}, ${expires}`;
    }
    case 'key.roll': {
      const replaced = details['replaced'] !== null && typeof details['replaced'] === 'object' ? (details['replaced'] as Details) : {};
      const expires = details['expiresAt'] ? `until ${dateWords(details['expiresAt'])}` : 'without expiry';
      return `rolled ${keyWords(replaced)} of ${site}: issued ${keyWords(details)}, ${expires}; the old key works until ${dateWords(replaced['expiresAt'])}`;
    }
    case 'key.revoke':
      return `revoked ${keyWords(details)} of ${site}${beforeAfter(details, 'status', (value) => textOf(value) ?? '?')}`;
    case 'ip.allow':
      return `added ${listWords(details['cidrs'])} to ${site}'s allowlist${beforeAfter(details, 'entries', entries)}`;
    case 'ip.revoke':
      return `removed ${listWords(details['cidrs'])} from ${site}'s allowlist${beforeAfter(details, 'entries', entries)}`;
    case 'token-client.add':
      return `registered ${client} for ${site}`;
    case 'token-client.create':
      return `created ${client} at the issuer for ${site}`;
    case 'token-client.rotate-secret':
      return `gave ${client} of ${site} a new secret`;
    case 'token-client.remove':
      return `removed ${client} from ${site}${details['deletedAtIssuer'] === true ? ', and at the issuer' : ''}`;
    case 'sunset.set':
      return `changed the API-key sunset from ${policyWords(details['previous'])} to ${policyWords(details['policy'])}`;
    case 'brownout.add':
      return `scheduled ${brownoutWords(details)}`;
    case 'brownout.cancel':
      return `cancelled brownout ${textOf(details['brownoutId']) ?? '?'}${beforeAfter(details, 'state', (value) => textOf(value) ?? '?')}`;
    default:
      return `made the change ${entry.action}${entry.siteId === null ? '' : ` to ${site}`}`;
  }
}

/**
 * Who made a change, in words that keep its parts apart: "alice@example.com (sub 248289761002)" for a
 * person whose provider verified the address, "sub 248289761005" without one, "CLI user alice" for the
 * name the CLI was given, and an entry from before the parts were kept apart as its one text in quotes.
 */
export function actorWords(actor: RecordedActor): string {
  // JSON's quoting: a quote inside the old text cannot close the quotes early and name someone else.
  if (actor.actorKind === null || actor.actorSubject === null) return JSON.stringify(actor.actor);
  if (actor.actorKind === 'cli') return `CLI user ${actor.actorSubject}`;
  return actorText({ kind: 'admin-token', subject: actor.actorSubject, ...(actor.actorEmail === null ? {} : { email: actor.actorEmail }) });
}

/** What the entry did, without who and when: "disabled site 1002 (Bravo Bikes) (from enabled to disabled)". */
export function auditDeed(entry: AuditEntry): string {
  return deed(entry, detailsOf(entry));
}

/**
 * An audit entry as a sentence: who did what to which site, with the before and after of what
 * changed where the entry recorded them, and when. "alice@example.com (sub 2482) switched site 1001 (Acme)
 * from API keys and tokens to tokens only — 29 Nov 2026 10:14 UTC". Old entries without a before
 * read as sentences too, without it.
 */
export function auditSentence(entry: AuditEntry): string {
  return `${actorWords(entry)} ${auditDeed(entry)} — ${instantWords(entry.at)}`;
}
