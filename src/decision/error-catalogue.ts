import { BODY_RULE_HINTS, BODY_RULE_MESSAGES, HEADER_RULE_WORDS, TOKEN_BODY_RULE_MESSAGES, TOKEN_RULE_HINTS, tokenRuleDescription } from './rule-words.js';
import type { BodyRule, Denial, ErrorId, HeaderRule, KeyId, SiteId, TokenRule } from './types.js';

/** google.rpc.Code, named here so that the decision depends on no transport library. */
export const GrpcCode = Object.freeze({ OK: 0, PERMISSION_DENIED: 7, UNAUTHENTICATED: 16 } as const);
export type GrpcCode = (typeof GrpcCode)[keyof typeof GrpcCode];

type DenialOf<K extends ErrorId> = Extract<Denial, { errorId: K }>;

/** What the decision log knows of a denial. */
export interface LoggedDenial {
  readonly siteId: SiteId | undefined;
  readonly clientIp: string | undefined;
  readonly maskedKey: string | undefined;
  readonly rule: HeaderRule | TokenRule | BodyRule | undefined;
  readonly errorMessage: string;
}

/** What `explain` read from the database and configuration beside the decision, to put a denial in words. */
export interface ExplainFacts {
  /** The denied site as stored now, its name on one line. */
  readonly site: { readonly name: string; readonly enabled: boolean; readonly allowlist: readonly string[] } | undefined;
  /** The header's API key as stored now (expiredAt only once it has passed). */
  readonly key: { readonly siteId: SiteId; readonly keyId: KeyId; readonly revokedAt: string | null; readonly expiredAt: string | null } | undefined;
  /** As received. */
  readonly clientAddress: string | undefined;
  /** CLIENT_IP_SOURCE in words. */
  readonly clientIpSource: string;
}

/** One error a partner can see, in every reader's words. Its id is its metric label (error_id). */
interface CatalogueEntry<D extends Denial> {
  readonly code: string;
  /** In Envoy's DeniedHttpResponse. */
  readonly httpStatus: number;
  /** In CheckResponse.status. */
  readonly grpcStatus: GrpcCode;
  readonly message: (denial: D) => string;
  /** WWW-Authenticate (RFC 6750 §3). */
  readonly challenge?: (denial: D) => string;
  /** `thePartnersMessage` where it says more than the line's fields. */
  readonly logReason: (denied: LoggedDenial) => string;
  /** What to look at or run. */
  readonly explain: (denial: D, facts: ExplainFacts) => string;
}

/** The log's reason for errors whose message says more than the line's fields. */
export const thePartnersMessage = (denied: LoggedDenial): string => denied.errorMessage;

// An allowlist can be long; the first entries are enough to see why an address is not on it.
const MAX_LISTED_NETWORKS = 20;
// A client address comes from the request: quote only so much of it.
const MAX_QUOTED = 64;

const quoted = (text: string): string => JSON.stringify(text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}…` : text);

function networks(allowlist: readonly string[]): string {
  const listed = allowlist.slice(0, MAX_LISTED_NETWORKS).join(', ');
  return allowlist.length > MAX_LISTED_NETWORKS ? `${listed} and ${allowlist.length - MAX_LISTED_NETWORKS} more` : listed;
}

function bodyRuleMessage(denial: DenialOf<104>): string {
  if (denial.rule === 'body-too-large') return BODY_RULE_MESSAGES[denial.rule](denial.maxBodyBytes);
  return (denial.clientId !== undefined ? TOKEN_BODY_RULE_MESSAGES[denial.rule] : undefined) ?? BODY_RULE_MESSAGES[denial.rule];
}

const day = (epochMs: number): string => new Date(epochMs).toISOString().slice(0, 10);
const instant = (epochMs: number): string => new Date(epochMs).toISOString().replace('.000Z', 'Z');

/** Spec, Versioning: the message says what is happening, until when, and where to go instead. */
function sunsetMessage(denial: DenialOf<105>): string {
  const guide = denial.guideUrl === undefined ? '' : `; migration guide: ${denial.guideUrl}`;
  if (denial.reason === 'tokens-only') return `API key authentication is switched off for site ${denial.siteId}; use token-based authentication${guide}`;
  if (denial.reason === 'retired') return `API key authentication has been retired; use token-based authentication${guide}`;
  // A brownout written straight into the database may end at 'infinity': no date to name then.
  const until = denial.brownout === undefined || !Number.isFinite(denial.brownout.until) ? '' : ` until ${instant(denial.brownout.until)}`;
  return (
    `API key authentication is switched off${until} for a scheduled brownout ahead of its retirement on ${day(denial.sunsetAt)}; ` +
    `migrate to token-based authentication${guide}`
  );
}

function explainUnknownSite(denial: DenialOf<101>, { site }: ExplainFacts): string {
  if (site === undefined) return `site ${denial.siteId} is unknown: there is no such site (\`sitekey-authz site list\` shows those there are)`;
  const named = site.name === '' ? '' : ` (${site.name})`;
  if (!site.enabled) return `site ${denial.siteId}${named} is disabled; \`sitekey-authz site enable ${denial.siteId}\` accepts its requests again`;
  return `site ${denial.siteId} is enabled now, but was not a moment ago when explain loaded it; run explain again`;
}

function explainNotAllowlisted(denial: DenialOf<103>, facts: ExplainFacts): string {
  const source = facts.clientIpSource;
  const address = facts.clientAddress;
  if (address === undefined) return `the request has no client IP: ${source} gives none`;
  if (denial.clientIp === 'unknown') return `the client address ${quoted(address)} (${source}) is not an IP address`;
  const allowlist = facts.site?.allowlist ?? [];
  if (allowlist.length === 0) {
    return `site ${denial.siteId}'s allowlist is empty, so it admits nobody; add the partner's addresses with \`sitekey-authz ip allow ${denial.siteId} <cidr>\``;
  }
  return `IP ${denial.clientIp} is not in site ${denial.siteId}'s allowlist: ${networks(allowlist)} (the client IP is from ${source})`;
}

function explainInvalidKey(denial: DenialOf<102>, { key }: ExplainFacts): string {
  const { siteId, maskedKey } = denial;
  if (key === undefined) return `key ${maskedKey} is unknown: it is no key of any site (a typo, or a key never issued or imported)`;
  if (key.siteId !== siteId) return `key ${maskedKey} belongs to another site: it is key ${key.keyId} of site ${key.siteId}, not a key of site ${siteId}`;
  const which = `key ${maskedKey} (key ${key.keyId} of site ${siteId})`;
  if (key.revokedAt !== null) return `${which} was revoked at ${key.revokedAt}`;
  if (key.expiredAt !== null) return `${which} expired at ${key.expiredAt}`;
  return `${which} is active now, but was not a moment ago when explain loaded the site's keys; run explain again`;
}

function explainRefusedToken(denial: DenialOf<106>): string {
  const hint = TOKEN_RULE_HINTS[denial.rule];
  return `the access token breaks rule ${denial.rule}: ${tokenRuleDescription(denial)}${hint === undefined ? '' : `; ${hint}`}`;
}

function explainBody(denial: DenialOf<104>): string {
  const hint = BODY_RULE_HINTS[denial.rule];
  return `the body breaks rule ${denial.rule}: ${bodyRuleMessage(denial)}${hint === undefined ? '' : `; ${hint}`}`;
}

function explainSunset(denial: DenialOf<105>): string {
  if (denial.reason === 'tokens-only') {
    return `site ${denial.siteId} accepts access tokens only; \`sitekey-authz site auth ${denial.siteId} both\` accepts its API keys again`;
  }
  const grace = `site ${denial.siteId} has no grace (\`sitekey-authz site grace ${denial.siteId} --until <date>\` gives it some)`;
  if (denial.reason === 'retired') return `API keys were retired at ${new Date(denial.sunsetAt).toISOString()} (enforced, see \`sitekey-authz sunset show\`) and ${grace}`;
  const brownout =
    denial.brownout === undefined
      ? 'a brownout'
      : `brownout ${denial.brownout.id}, ${Number.isFinite(denial.brownout.until) ? `until ${new Date(denial.brownout.until).toISOString()}` : 'without end'},`;
  return `${brownout} refuses API keys and ${grace}`;
}

/** Every error a partner can see, one row per id (spec, Errors), in the order decide() checks them. */
export const ERROR_CATALOGUE: { readonly [K in ErrorId]: CatalogueEntry<DenialOf<K>> } = Object.freeze({
  108: {
    code: 'HEADER_INVALID',
    httpStatus: 401,
    grpcStatus: GrpcCode.UNAUTHENTICATED,
    message: () => 'Site ID or API key is invalid or missing in the header',
    logReason: (denied) => HEADER_RULE_WORDS[denied.rule as HeaderRule],
    explain: (denial) => HEADER_RULE_WORDS[denial.rule],
  },
  106: {
    code: 'ACCESS_TOKEN_INVALID',
    httpStatus: 401,
    grpcStatus: GrpcCode.UNAUTHENTICATED,
    message: (denial) => `Access token is invalid: ${tokenRuleDescription(denial)}`,
    challenge: (denial) => `Bearer error="invalid_token", error_description="${tokenRuleDescription(denial)}"`,
    logReason: thePartnersMessage,
    explain: explainRefusedToken,
  },
  107: {
    code: 'TOKEN_CLIENT_UNKNOWN',
    httpStatus: 403,
    grpcStatus: GrpcCode.PERMISSION_DENIED,
    message: (denial) => `Token client ${denial.clientId} is not registered for any site; ask your account manager to register client ${denial.clientId} for your site`,
    logReason: thePartnersMessage,
    explain: (denial) =>
      `token client ${denial.clientId} is registered to no site, and the partner is told to ask their account manager to register it; \`sitekey-authz token-client add <site id> ${denial.clientId}\` registers it`,
  },
  101: {
    code: 'SITE_INVALID',
    httpStatus: 401,
    grpcStatus: GrpcCode.UNAUTHENTICATED,
    message: (denial) => `Site ID ${denial.siteId} is invalid`,
    logReason: (denied) => `site ${denied.siteId} is not a registered site, or it is disabled`,
    explain: explainUnknownSite,
  },
  103: {
    code: 'IP_NOT_WHITELISTED',
    httpStatus: 403,
    grpcStatus: GrpcCode.PERMISSION_DENIED,
    message: (denial) => `IP address ${denial.clientIp} is not whitelisted for site ID ${denial.siteId}`,
    logReason: (denied) => `client IP ${denied.clientIp ?? '(none)'} is not on site ${denied.siteId}'s allowlist`,
    explain: explainNotAllowlisted,
  },
  102: {
    code: 'API_KEY_INVALID',
    httpStatus: 401,
    grpcStatus: GrpcCode.UNAUTHENTICATED,
    message: (denial) => `API key ${denial.maskedKey} is invalid`,
    logReason: (denied) => `API key ${denied.maskedKey} is not an active key of site ${denied.siteId} (unknown, revoked or expired)`,
    explain: explainInvalidKey,
  },
  104: {
    code: 'BODY_CREDENTIALS_INVALID',
    httpStatus: 401,
    grpcStatus: GrpcCode.UNAUTHENTICATED,
    message: bodyRuleMessage,
    logReason: thePartnersMessage,
    explain: explainBody,
  },
  105: {
    code: 'API_KEY_AUTH_RETIRED',
    httpStatus: 401,
    grpcStatus: GrpcCode.UNAUTHENTICATED,
    message: sunsetMessage,
    logReason: thePartnersMessage,
    explain: explainSunset,
  },
});

/** What the readers of the table take, so that a new row is all a new id needs. */
export type ErrorCatalogue = Readonly<Record<number, CatalogueEntry<never>>>;

export function errorIdsOf(catalogue: ErrorCatalogue): readonly number[] {
  return Object.keys(catalogue).map(Number);
}

/** The metric labels (error_id), from the table. */
export const ERROR_IDS: readonly ErrorId[] = Object.freeze(errorIdsOf(ERROR_CATALOGUE) as ErrorId[]);

export const errorMetricLabel = (errorId: number): string => String(errorId);

// The entry is the one for the denial's errorId, so it takes that denial (TypeScript cannot pair them).
const entryOf = (errorId: number, catalogue: ErrorCatalogue = ERROR_CATALOGUE): CatalogueEntry<never> => catalogue[errorId] as CatalogueEntry<never>;

/** Never contains a full key. */
export function denialMessage(denial: Denial, catalogue?: ErrorCatalogue): string {
  return entryOf(denial.errorId, catalogue).message(denial as never);
}

export function denialChallenge(denial: Denial): string | undefined {
  return entryOf(denial.errorId).challenge?.(denial as never);
}

/** The exact JSON body the spec prescribes: {"error":{"id":N,"message":"..."}}. */
export function denialBody(denial: Denial, catalogue?: ErrorCatalogue): string {
  return JSON.stringify({ error: { id: denial.errorId, message: denialMessage(denial, catalogue) } });
}

export function loggedReason(denied: LoggedDenial & { readonly errorId: number }, catalogue?: ErrorCatalogue): string {
  return entryOf(denied.errorId, catalogue).logReason(denied);
}

/** Whether the log's reason is the partner's message, which then tells repeated denials apart. */
export function reasonIsMessage(errorId: number, catalogue?: ErrorCatalogue): boolean {
  return entryOf(errorId, catalogue).logReason === thePartnersMessage;
}

export function explainDenial(denial: Denial, facts: ExplainFacts, catalogue?: ErrorCatalogue): string {
  return entryOf(denial.errorId, catalogue).explain(denial as never, facts);
}
