import type pg from 'pg';
import { checkPolicies } from '../envoy/check-policies.js';
import type { ClientIpSource, Config } from '../config.js';
import type { Logger } from '../observe/logger.js';
import { hashApiKey } from '../decision/api-key.js';
import { authMethodOf } from '../decision/decide.js';
import { HEADER_RULE_WORDS, tokenRuleDescription } from '../decision/error-catalogue.js';
import { bearerToken, parseAuthorization, type ParsedAuthorization } from '../decision/parse-authorization.js';
import type { Allowed, BodyRule, CheckInput, Decision, Denial, SiteId, TokenRule, Undecided } from '../decision/types.js';
import { toCheckResponse } from '../envoy/check-response.js';
import { viewCheckRequest } from '../envoy/request-view.js';
import { authorizeCheck } from '../token/authorize-check.js';
import { findKey, findSite, findTokenClient } from '../store/credential-lookup.js';
import { IssuerKeys } from '../token/issuer-keys.js';
import { issuerKeysOptions } from '../store/token-key-sets.js';
import { TokenVerifier } from '../token/token-verifier.js';
import { SiteTable } from '../store/site-table.js';
import { loadBrownouts, loadSites } from '../store/snapshot-loader.js';
import { loadSunsetPolicy } from '../store/sunset-policy.js';
import { epochMsOf, instantText } from '../store/timestamps.js';
import { answerOf, exitStatusOf, verdictText, type CheckAnswer } from './check-answer.js';
import type { CommandContext, CommandLine } from './command.js';
import { oneLine, type CommandOutput } from './output.js';
import { requestFromOptions } from './request-options.js';

/** How long explain waits for the token issuer's keys. */
const ISSUER_KEYS_WAIT_MS = 10_000;
// An allowlist can be long; the first entries are enough to see why an address is not on it.
const MAX_LISTED_NETWORKS = 20;
// A client address comes from the request: quote only so much of it.
const MAX_QUOTED = 64;


/** What to do about some body rules; the partner-facing message already names the rule. */
const BODY_RULE_HINTS: Readonly<Partial<Record<BodyRule, string>>> = {
  'body-missing': 'a route whose requests have no body can opt out with the context extension body_credentials: optional',
  'body-not-forwarded':
    "the request declares a body but none reached the service: turn on with_request_body in Envoy's ext_authz filter",
  'body-partial':
    'Envoy cut the body at max_request_bytes (x-envoy-auth-partial-body: true): raise max_request_bytes, or set allow_partial_message: false so that Envoy refuses larger bodies itself',
};

/** What explain knows beside the decision, to put it in words. */
interface Facts {
  readonly pool: pg.Pool;
  readonly input: CheckInput;
  readonly header: ParsedAuthorization;
  readonly clientIpSource: ClientIpSource;
  readonly now: number;
  /** The message of the denial body the service sends. */
  readonly message: string | undefined;
}

function quoted(text: string): string {
  return JSON.stringify(text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}…` : text);
}

function ipSourceWords(source: ClientIpSource): string {
  switch (source.kind) {
    case 'peer':
      return 'CLIENT_IP_SOURCE=peer, the peer address Envoy reports in attributes.source.address';
    case 'xff':
      return `CLIENT_IP_SOURCE=xff with XFF_TRUSTED_HOPS=${source.trustedHops}, from X-Forwarded-For`;
    case 'header':
      return `CLIENT_IP_SOURCE=header:${source.name}`;
  }
}

function networks(allowlist: readonly string[]): string {
  const listed = allowlist.slice(0, MAX_LISTED_NETWORKS).join(', ');
  return allowlist.length > MAX_LISTED_NETWORKS ? `${listed} and ${allowlist.length - MAX_LISTED_NETWORKS} more` : listed;
}

const keyOf = async ({ pool, header }: Facts) => (header.ok && header.method === 'api_key' ? findKey(pool, hashApiKey(header.apiKey)) : undefined);

/** What to do about a refused token, beside what the partner-facing message says. */
const TOKEN_RULE_HINTS: Readonly<Partial<Record<TokenRule, string>>> = {
  'tokens-disabled': 'set TOKEN_ISSUER and TOKEN_AUDIENCE to accept access tokens (docs/tokens.md, "Token-based authentication")',
  'keys-unavailable':
    "the issuer's keys could not be fetched from TOKEN_JWKS_URL (or TOKEN_ISSUER's discovery document) and the database holds no key set stored by an earlier fetch: check that the issuer is up and reachable from here (docs/tokens.md, \"When the issuer is down\")",
  malformed:
    'an issuer that is not told the resource (RFC 8707) often hands out an opaque token instead of a JWT: the partner must send resource=<TOKEN_AUDIENCE> with the token request',
  issuer: 'the service trusts TOKEN_ISSUER only; the token says (unverified) it comes from another issuer, e.g. a staff sign-in or a test issuer',
  audience: "the partner must request the token for this API's resource (TOKEN_AUDIENCE)",
  type: 'an issuer that writes typ JWT can be accepted with TOKEN_TYPES=at+jwt,jwt',
  'unknown-key': "the service fetches the issuer's keys again at most every few seconds when a token names a new one; if this persists, the token was not signed by TOKEN_ISSUER",
  revoked: '`sitekey-authz site revoke-tokens` was run for the site after the token was issued',
};

function tokenWords(denial: Extract<Denial, { errorId: 106 }>): string {
  const hint = TOKEN_RULE_HINTS[denial.rule];
  return `the access token breaks rule ${denial.rule}: ${tokenRuleDescription(denial)}${hint === undefined ? '' : `; ${hint}`}`;
}

async function allowWords(decision: Allowed, facts: Facts): Promise<string> {
  if (decision.method === 'token') {
    return (
      `the access token verified (client ${decision.clientId}, registered to site ${decision.siteId}), site ${decision.siteId} is enabled, ` +
      `and the client IP ${facts.input.clientAddress ?? ''} is on its allowlist`
    );
  }
  const { siteId, keyId } = decision;
  const expiresAt = (await keyOf(facts))?.expiresAt ?? null;
  const body =
    facts.input.body.kind === 'empty'
      ? 'the request has no body, which the route allows (context extension body_credentials: optional)'
      : "the body's siteid and apikey match the header's";
  const rehearsal =
    decision.rehearsal === undefined ? '' : `; dry-run brownout ${decision.rehearsal.brownoutId} counts it as one it would refuse (105)`;
  return (
    `site ${siteId} is enabled, the client IP ${facts.input.clientAddress ?? ''} is on its allowlist, ` +
    `key ${keyId} is an active key of the site (${expiresAt === null || epochMsOf(expiresAt) === Infinity ? 'it never expires' : `until ${instantText(expiresAt)}`}), and ${body}${rehearsal}`
  );
}

async function siteWords(denial: Extract<Denial, { errorId: 101 }>, { pool }: Facts): Promise<string> {
  const site = await findSite(pool, denial.siteId);
  if (site === undefined) return `site ${denial.siteId} is unknown: there is no such site (\`sitekey-authz site list\` shows those there are)`;
  const named = site.name === '' ? '' : ` (${oneLine(site.name)})`;
  if (!site.enabled) return `site ${denial.siteId}${named} is disabled; \`sitekey-authz site enable ${denial.siteId}\` accepts its requests again`;
  return `site ${denial.siteId} is enabled now, but was not a moment ago when explain loaded it; run explain again`;
}

async function allowlistWords(denial: Extract<Denial, { errorId: 103 }>, facts: Facts): Promise<string> {
  const source = ipSourceWords(facts.clientIpSource);
  const address = facts.input.clientAddress;
  if (address === undefined) return `the request has no client IP: ${source} gives none`;
  if (denial.clientIp === 'unknown') return `the client address ${quoted(address)} (${source}) is not an IP address`;
  const allowlist = (await findSite(facts.pool, denial.siteId))?.allowlist ?? [];
  if (allowlist.length === 0) {
    return `site ${denial.siteId}'s allowlist is empty, so it admits nobody; add the partner's addresses with \`sitekey-authz ip allow ${denial.siteId} <cidr>\``;
  }
  return `IP ${denial.clientIp} is not in site ${denial.siteId}'s allowlist: ${networks(allowlist)} (the client IP is from ${source})`;
}

async function keyWords(denial: Extract<Denial, { errorId: 102 }>, facts: Facts): Promise<string> {
  const { siteId, maskedKey } = denial;
  const key = await keyOf(facts);
  if (key === undefined) return `key ${maskedKey} is unknown: it is no key of any site (a typo, or a key never issued or imported)`;
  if (key.siteId !== siteId) return `key ${maskedKey} belongs to another site: it is key ${key.keyId} of site ${key.siteId}, not a key of site ${siteId}`;
  const which = `key ${maskedKey} (key ${key.keyId} of site ${siteId})`;
  if (key.revokedAt !== null) return `${which} was revoked at ${instantText(key.revokedAt)}`;
  if (key.expiresAt !== null && epochMsOf(key.expiresAt) <= facts.now) return `${which} expired at ${instantText(key.expiresAt)}`;
  return `${which} is active now, but was not a moment ago when explain loaded the site's keys; run explain again`;
}

function bodyWords(denial: Extract<Denial, { errorId: 104 }>, facts: Facts): string {
  const hint = BODY_RULE_HINTS[denial.rule];
  return `the body breaks rule ${denial.rule}: ${facts.message ?? ''}${hint === undefined ? '' : `; ${hint}`}`;
}

function sunsetWords(denial: Extract<Denial, { errorId: 105 }>): string {
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

/** Why, in words; the database is read again only to explain what the decision already decided. */
async function reasonFor(decision: Decision, facts: Facts): Promise<string> {
  if (decision.outcome === 'allow') return allowWords(decision, facts);
  const { denial } = decision;
  switch (denial.errorId) {
    case 108:
      return HEADER_RULE_WORDS[denial.rule];
    case 106:
      return tokenWords(denial);
    case 107:
      return `token client ${denial.clientId} is registered to no site, and the partner is told to ask their account manager to register it; \`sitekey-authz token-client add <site id> ${denial.clientId}\` registers it`;
    case 101:
      return siteWords(denial, facts);
    case 103:
      return allowlistWords(denial, facts);
    case 102:
      return keyWords(denial, facts);
    case 104:
      return bodyWords(denial, facts);
    case 105:
      return sunsetWords(denial);
  }
}

/** The ids and rule (for 105 its reason) the decision names, which the wire does not carry on a denial. */
function identified(decision: Decision): Pick<CheckAnswer, 'siteId' | 'keyId' | 'rule' | 'authMethod' | 'clientId'> {
  const named: {
    readonly siteId?: string;
    readonly keyId?: string;
    readonly clientId?: string;
    readonly rule?: string;
    readonly reason?: string;
  } = decision.outcome === 'allow' ? decision : decision.denial;
  return {
    siteId: named.siteId ?? null,
    keyId: named.keyId ?? null,
    clientId: named.clientId ?? null,
    authMethod: authMethodOf(decision) ?? null,
    rule: named.rule ?? named.reason ?? null,
  };
}

/**
 * The token's verifier for a Bearer request, with the issuer's keys as the service holds them: the
 * last good set from the database, then one fetch; undefined for any other request. Without keys
 * the service refuses tokens (keys-unavailable), and so does explain.
 */
async function tokenVerifier(config: Config, input: CheckInput, pool: pg.Pool, logger: Logger): Promise<{ verifier: TokenVerifier; stop: () => Promise<void> } | undefined> {
  if (config.tokens === undefined || bearerToken(input.authorization) === undefined) return undefined;
  const options = issuerKeysOptions(config.tokens, pool, logger);
  // Read, never written: explain looks at the service's state and changes none of it.
  const store = options.store && { load: options.store.load, save: async () => undefined };
  // The request came before explain fetched any key: a kid its set lacks is looked up again at once, so
  // that a fetch made after the token arrived decides it, as the service's next fetch does.
  const keys = new IssuerKeys({ ...options, ...(store && { store }), retryMs: 1_000, unknownKeyCooldownMs: 0 });
  await Promise.race([keys.start(), new Promise((resolve) => setTimeout(resolve, ISSUER_KEYS_WAIT_MS).unref())]);
  return { verifier: new TokenVerifier(config.tokens, keys), stop: () => keys.stop() };
}

/** The site whose credentials decide the request: the header's, or the one the token's client is registered to. */
async function siteToLoad(pool: pg.Pool, header: ParsedAuthorization, input: CheckInput, verifier: TokenVerifier | undefined, now: number): Promise<SiteId[]> {
  if (header.ok && header.method === 'api_key') return [header.siteId];
  const token = bearerToken(input.authorization);
  if (verifier === undefined || token === undefined) return [];
  const verdict = await verifier.verify(token, now);
  if ('undecided' in verdict || !verdict.valid) return [];
  const client = await findTokenClient(pool, verdict.claims.clientId);
  return client === undefined ? [] : [client.siteId];
}

/** The service leaves such a check undecided (Envoy's retryable 503), and so does explain: exit 2. */
function undecidedOutput(undecided: Undecided, notes: readonly string[]): CommandOutput {
  const why = "the token names a signing key (kid) that the issuer's key set lacks, and the issuer could not be asked again; the service answers UNAVAILABLE (Envoy's retryable 503) until a fetch of the issuer's keys says whether it publishes the key";
  return { text: `no verdict (${undecided.undecided})\nwhy: ${why}`, json: { undecided: undecided.undecided, reason: why }, warnings: [...notes], exitCode: 2 };
}

const SHADOW_MODE_NOTE =
  'SHADOW_MODE is on here: a service running with it lets this request through (logged as check.shadow-denied, counted in `report denials`) instead of denying it';

/**
 * `sitekey-authz explain`: what the service would answer to this request, and why, worked out
 * offline from the credential database by the service's own code: the request view, the snapshot
 * loader and table, the token verifier, decide() and toCheckResponse(), with the service's policies
 * from the same configuration. Exit 0 allowed, 1 denied, 2 no verdict.
 */
export async function runExplain({ config, logger, now, readStdin, withPool }: CommandContext, line: CommandLine): Promise<CommandOutput> {
  const { request, notes } = await requestFromOptions(line, readStdin);
  const { input } = viewCheckRequest(request, config);
  // Parsed here only to know which site to load (the one the service would look at) and which key to explain.
  const header = parseAuthorization(input.authorization);
  return withPool(async (pool) => {
    const tokens = await tokenVerifier(config, input, pool, logger);
    try {
      const snapshot = new SiteTable();
      const [sites, brownouts, stored] = await Promise.all([
        loadSites(pool, await siteToLoad(pool, header, input, tokens?.verifier, now)),
        loadBrownouts(pool),
        loadSunsetPolicy(pool),
      ]);
      snapshot.replaceAll(sites, brownouts, now);
      // The sunset policy the service follows: the database's, not this terminal's environment.
      const { sunset, allowedResponse } = checkPolicies(config, stored && { sunsetAt: stored.sunsetAt, enforce: stored.enforce, guideUrl: stored.guideUrl });
      const decided = await authorizeCheck(input, { snapshot: () => snapshot, sunset, tokens: tokens?.verifier, now: () => now });
      if (decided !== undefined && 'undecided' in decided) return undecidedOutput(decided, notes);
      const decision = decided as Decision;
      const response = toCheckResponse(decision, allowedResponse);
      const answer: CheckAnswer = { ...answerOf(response), ...identified(decision) };
      const facts: Facts = { pool, input, header, clientIpSource: config.clientIpSource, now, message: answer.error?.message };
      const reason = await reasonFor(decision, facts);
      const shadow = config.shadowMode && decision.outcome === 'deny' ? [SHADOW_MODE_NOTE] : [];
      return { text: `${verdictText(response)}\nwhy: ${reason}`, json: answer, warnings: [...notes, ...shadow], exitCode: exitStatusOf(answer) };
    } finally {
      await tokens?.stop();
    }
  });
}
