import { actorText, type RecordedActor } from '../store/audit-actor.js';
import type { AuditEntry } from '../store/audit-log.js';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;

const twoDigits = (value: number): string => String(value).padStart(2, '0');

/** "29 Nov 2026 10:14 UTC": the month in letters, so that no reader takes 03/04 for the wrong month. */
export function instantWords(iso: string): string {
  if (iso === 'infinity') return 'never';
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) return iso;
  const at = new Date(ms);
  return `${at.getUTCDate()} ${MONTHS[at.getUTCMonth()]} ${at.getUTCFullYear()} ${twoDigits(at.getUTCHours())}:${twoDigits(at.getUTCMinutes())} UTC`;
}

// Any JSON, even written by hand: every field is read with care.
type Details = Readonly<Record<string, unknown>>;

const detailsOf = (entry: AuditEntry): Details =>
  typeof entry.details === 'object' && entry.details !== null && !Array.isArray(entry.details) ? (entry.details as Details) : {};

const textOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined);
const partOf = (value: unknown, field: string): unknown => (typeof value === 'object' && value !== null ? (value as Details)[field] : undefined);

const METHOD_WORDS: Readonly<Record<string, string>> = { both: 'API keys and tokens', tokens: 'tokens only' };
const methodWords = (value: unknown): string => METHOD_WORDS[textOf(value) ?? ''] ?? String(textOf(value) ?? 'an unknown method');
const dateWords = (value: unknown): string => (textOf(value) === undefined ? 'an unknown date' : instantWords(textOf(value) as string));
const listWords = (value: unknown): string => (Array.isArray(value) ? value.map((item) => textOf(item) ?? '?').join(', ') : '');
const enabledWords = (value: unknown): string => (value === true ? 'enabled' : 'disabled');
const stateWords = (value: unknown): string => textOf(value) ?? '?';
const entriesWords = (value: unknown): string => (value === 1 ? '1 entry' : `${textOf(value) ?? '?'} entries`);
const expiryWords = ({ expiresAt }: Details) => (expiresAt ? `until ${dateWords(expiresAt)}` : 'without expiry');
const previousWords = ({ previous }: Details) => (previous ? `until ${dateWords(previous)}` : 'none');

const siteWords = (entry: AuditEntry): string =>
  entry.siteId === null ? 'no site' : `site ${entry.siteId}${entry.siteName === null || entry.siteName === '' ? '' : ` (${entry.siteName})`}`;

function beforeAfter(details: Details, field: string, words: (value: unknown) => string): string {
  const before = partOf(details['before'], field);
  const after = partOf(details['after'], field);
  if (before === undefined || after === undefined) return '';
  return ` (from ${words(before)} to ${words(after)})`;
}

function keyWords(details: Details): string {
  const masked = textOf(details['maskedKey']);
  return `key ${textOf(details['keyId']) ?? '?'}${masked === undefined ? '' : ` (${masked})`}`;
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

function tokensRevokedWords(site: string, details: Details): string {
  const before = partOf(details['before'], 'tokensNotBefore');
  const earlier = details['before'] === undefined ? '' : ` (before: ${before ? `those issued before ${dateWords(before)}` : 'none revoked'})`;
  return `revoked ${site}'s access tokens issued before ${dateWords(details['tokensNotBefore'])}${earlier}`;
}

function rollWords(site: string, details: Details): string {
  const replaced = details['replaced'] !== null && typeof details['replaced'] === 'object' ? (details['replaced'] as Details) : {};
  const oldEnd = `the old key works until ${dateWords(replaced['expiresAt'])}`;
  return `rolled ${keyWords(replaced)} of ${site}: issued ${keyWords(details)}, ${expiryWords(details)}; ${oldEnd}`;
}

const DEEDS: Readonly<Record<string, (site: string, details: Details) => string>> = {
  'site.add': (site) => `added ${site}`,
  'site.enable': (site, details) => `enabled ${site}${beforeAfter(details, 'enabled', enabledWords)}`,
  'site.disable': (site, details) => `disabled ${site}${beforeAfter(details, 'enabled', enabledWords)}`,
  'site.auth': (site, details) =>
    details['previous'] === undefined
      ? `switched ${site} to ${methodWords(details['authMethod'])}`
      : `switched ${site} from ${methodWords(details['previous'])} to ${methodWords(details['authMethod'])}`,
  'site.grace': (site, details) =>
    `gave ${site} a grace for API keys until ${dateWords(details['graceUntil'])} (before: ${previousWords(details)})`,
  'site.grace.clear': (site, details) => `ended ${site}'s grace for API keys (before: ${previousWords(details)})`,
  'site.revoke-tokens': tokensRevokedWords,
  'key.issue': (site, details) => `issued ${keyWords(details)} for ${site}, ${expiryWords(details)}`,
  'key.import': (site, details) => `imported ${keyWords(details)} for ${site}, ${expiryWords(details)}`,
  'key.roll': rollWords,
  'key.revoke': (site, details) =>
    `revoked ${keyWords(details)} of ${site}${beforeAfter(details, 'status', stateWords)}`,
  'ip.allow': (site, details) =>
    `added ${listWords(details['cidrs'])} to ${site}'s allowlist${beforeAfter(details, 'entries', entriesWords)}`,
  'ip.revoke': (site, details) =>
    `removed ${listWords(details['cidrs'])} from ${site}'s allowlist${beforeAfter(details, 'entries', entriesWords)}`,
  'token-client.add': (site, details) => `registered ${clientWords(details)} for ${site}`,
  'token-client.create': (site, details) => `created ${clientWords(details)} at the issuer for ${site}`,
  'token-client.rotate-secret': (site, details) => `gave ${clientWords(details)} of ${site} a new secret`,
  'token-client.remove': (site, details) =>
    `removed ${clientWords(details)} from ${site}${details['deletedAtIssuer'] === true ? ', and at the issuer' : ''}`,
  'sunset.set': (_site, details) =>
    `changed the API-key sunset from ${policyWords(details['previous'])} to ${policyWords(details['policy'])}`,
  'brownout.add': (_site, details) => `scheduled ${brownoutWords(details)}`,
  'brownout.cancel': (_site, details) =>
    `cancelled brownout ${textOf(details['brownoutId']) ?? '?'}${beforeAfter(details, 'state', stateWords)}`,
};

function clientWords(details: Details): string {
  return `token client ${textOf(details['clientId']) ?? '?'}`;
}

/** "alice@example.com (sub 2482)", "sub 2482", "CLI user alice", or an older entry's one text in quotes. */
export function actorWords(actor: RecordedActor): string {
  // JSON's quoting: a quote inside the old text cannot close the quotes early and name someone else.
  if (actor.actorKind === null || actor.actorSubject === null) return JSON.stringify(actor.actor);
  if (actor.actorKind === 'cli') return `CLI user ${actor.actorSubject}`;
  return actorText({ kind: 'admin-token', subject: actor.actorSubject, ...(actor.actorEmail === null ? {} : { email: actor.actorEmail }) });
}

export function auditDeed(entry: AuditEntry): string {
  const site = siteWords(entry);
  const deed = Object.hasOwn(DEEDS, entry.action) ? DEEDS[entry.action] : undefined;
  if (deed !== undefined) return deed(site, detailsOf(entry));
  return `made the change ${entry.action}${entry.siteId === null ? '' : ` to ${site}`}`;
}

export function auditSentence(entry: AuditEntry): string {
  return `${actorWords(entry)} ${auditDeed(entry)} — ${instantWords(entry.at)}`;
}
