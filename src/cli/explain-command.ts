import type pg from 'pg';
import { checkPolicies } from '../envoy/check-policies.js';
import type { ClientIpSource, Config } from '../config.js';
import type { Logger } from '../observe/logger.js';
import { hashApiKey } from '../decision/api-key.js';
import { authMethodOf } from '../decision/decide.js';
import { explainDenial, type ExplainFacts } from '../decision/error-catalogue.js';
import { bearerToken, parseAuthorization, type ParsedAuthorization } from '../decision/parse-authorization.js';
import type { Allowed, CheckInput, Decision, Denial, SiteId, Undecided } from '../decision/types.js';
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

const ISSUER_KEYS_WAIT_MS = 10_000;

interface Facts {
  readonly pool: pg.Pool;
  readonly input: CheckInput;
  readonly header: ParsedAuthorization;
  readonly clientIpSource: ClientIpSource;
  readonly now: number;
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

const keyOf = async ({ pool, header }: Facts) => (header.ok && header.method === 'api_key' ? findKey(pool, hashApiKey(header.apiKey)) : undefined);

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

async function explainFacts(denial: Denial, facts: Facts): Promise<ExplainFacts> {
  const [site, key] = await Promise.all(['siteId' in denial && denial.siteId !== undefined ? findSite(facts.pool, denial.siteId) : undefined, keyOf(facts)]);
  const expiresAt = key?.expiresAt ?? null;
  return {
    site: site && { name: oneLine(site.name), enabled: site.enabled, allowlist: site.allowlist },
    key: key && {
      siteId: key.siteId,
      keyId: key.keyId,
      revokedAt: key.revokedAt === null ? null : instantText(key.revokedAt),
      expiredAt: expiresAt !== null && epochMsOf(expiresAt) <= facts.now ? instantText(expiresAt) : null,
    },
    clientAddress: facts.input.clientAddress,
    clientIpSource: ipSourceWords(facts.clientIpSource),
  };
}

/** The ids and rule (for 105 its reason) the decision names, which the wire does not carry on a denial. */
function identified(decision: Decision): Pick<CheckAnswer, 'siteId' | 'keyId' | 'rule' | 'authMethod' | 'clientId'> {
  const named: Partial<Record<'siteId' | 'keyId' | 'clientId' | 'rule' | 'reason', string>> =
    decision.outcome === 'allow' ? decision : decision.denial;
  return {
    siteId: named.siteId ?? null,
    keyId: named.keyId ?? null,
    clientId: named.clientId ?? null,
    authMethod: authMethodOf(decision) ?? null,
    rule: named.rule ?? named.reason ?? null,
  };
}

/** The issuer's keys as the service holds them: the last good set from the database, then one fetch. */
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

/** The service leaves such a check undecided (Envoy's retryable 503), and so does explain. */
function undecidedOutput(undecided: Undecided, notes: readonly string[]): CommandOutput {
  const why = "the token names a signing key (kid) that the issuer's key set lacks, and the issuer could not be asked again; the service answers UNAVAILABLE (Envoy's retryable 503) until a fetch of the issuer's keys says whether it publishes the key";
  return { text: `no verdict (${undecided.undecided})\nwhy: ${why}`, json: { undecided: undecided.undecided, reason: why }, warnings: [...notes], exitCode: 2 };
}

const SHADOW_MODE_NOTE =
  'SHADOW_MODE is on here: a service running with it lets this request through (logged as check.shadow-denied, counted in `report denials`) instead of denying it';

/** What the service would answer, and why, worked out from the credential database by the service's own code. */
export async function runExplain({ config, logger, now, readStdin, withPool }: CommandContext, line: CommandLine): Promise<CommandOutput> {
  const { request, notes } = await requestFromOptions(line, readStdin);
  const { input } = viewCheckRequest(request, config);
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
      const facts: Facts = { pool, input, header, clientIpSource: config.clientIpSource, now };
      const reason =
        decision.outcome === 'allow'
          ? await allowWords(decision, facts)
          : explainDenial(decision.denial, await explainFacts(decision.denial, facts));
      const shadow = config.shadowMode && decision.outcome === 'deny' ? [SHADOW_MODE_NOTE] : [];
      return { text: `${verdictText(response)}\nwhy: ${reason}`, json: answer, warnings: [...notes, ...shadow], exitCode: exitStatusOf(answer) };
    } finally {
      await tokens?.stop();
    }
  });
}
