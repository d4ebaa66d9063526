import { tokenRuleDescription } from '../decision/rule-words.js';
import type { TokenRule } from '../decision/types.js';
import { OVERFLOW_ADDRESS } from '../store/denial-stats-recorder.js';
import type { AuditMention, ClientStanding, SiteStanding } from '../store/refusal-facts.js';
import { actorWords, instantWords } from './audit-sentences.js';

/** `audit`: the action (site.disable) or group (ip) of the change behind it, and its site (null: every site's). */
export interface RefusalExplanation {
  readonly reason: string;
  readonly nextStep: string;
  readonly audit: { readonly action: string; readonly siteId: string | null } | null;
}

/** One counted refusal, from the address counts (denial_stats) or the token counts (token_refusal_stats). */
export interface CountedRefusal {
  readonly errorId: number;
  readonly siteId: string | null;
  /** null for a refused token (counted by client, not address). */
  readonly clientIp: string | null;
  readonly clientId: string | null;
  readonly rule: string | null;
  /** A refused token's client id was signed by our issuer; null for an API key's refusal. */
  readonly signed: boolean | null;
  readonly rehearsal: boolean;
  readonly shadow: boolean;
  readonly moreAddresses: number;
  readonly lastSeen: string;
}

export interface RefusalContext {
  readonly site: SiteStanding | undefined;
  readonly client: ClientStanding | undefined;
  readonly sunsetAt: string;
  /** TOKEN_AUDIENCE: the resource a partner asks the issuer for. */
  readonly audience: string | undefined;
}

// The address of refusals the service could not read one for.
const UNREADABLE_ADDRESS = 'unknown';
const ALLOWLIST_QUOTED = 5;

const by = (change: AuditMention | undefined): string => (change === undefined ? '' : ` on ${instantWords(change.at)} by ${actorWords(change)}`);
const since = (change: AuditMention | undefined): string => (change === undefined ? '' : ` since ${instantWords(change.at)} (switched by ${actorWords(change)})`);
const siteNamed = (site: SiteStanding): string => `site ${site.siteId}${site.name === '' ? '' : ` (${site.name})`}`;
const pointer = (action: string, siteId: string | null): RefusalExplanation['audit'] => ({ action, siteId });

function unknownSite(refusal: CountedRefusal): RefusalExplanation {
  return {
    reason:
      refusal.siteId === null
        ? 'the requests named a site id that does not exist or is disabled (such refusals are counted together, whatever the id)'
        : `site ${refusal.siteId} does not exist, so every request naming it is refused`,
    nextStep: 'ask the partner which site id they send, and compare it with their site on the Sites page',
    audit: null,
  };
}

/** A disabled site refuses everything (101); the refusals are counted with unknown sites, so the site itself says so. */
function disabledSite(site: SiteStanding): RefusalExplanation {
  return {
    reason: `${siteNamed(site)} ${site.latest['site.disable'] === undefined ? 'is disabled' : `was disabled${by(site.latest['site.disable'])}`}: every request of it is refused (101)`,
    nextStep: 'enable the site on its page if the partner should be let in again',
    audit: pointer('site.disable', site.siteId),
  };
}

function notOnAllowlist(refusal: CountedRefusal, site: SiteStanding): RefusalExplanation {
  const audit = pointer(site.latest['ip.revoke'] === undefined ? 'ip' : 'ip.revoke', site.siteId);
  const removed = site.latest['ip.revoke'] === undefined ? '' : `; addresses were last removed${by(site.latest['ip.revoke'])}`;
  if (refusal.clientIp === OVERFLOW_ADDRESS) {
    return {
      reason: `${refusal.moreAddresses} more client addresses than the report keeps one row for are not on ${siteNamed(site)}'s allowlist${removed}`,
      nextStep: "ask the partner for the networks they send from, and add them to the site's allowlist",
      audit,
    };
  }
  if (refusal.clientIp === UNREADABLE_ADDRESS || refusal.clientIp === null) {
    return {
      reason: 'the client address of the requests could not be read as an IP address, so no allowlist can admit them',
      nextStep: 'tell the operators: the service reads the client address from the wrong place for this route',
      audit: null,
    };
  }
  const listed = site.allowlist.length === 0
    ? ', which is empty: it admits nobody'
    : ` (${site.allowlist.slice(0, ALLOWLIST_QUOTED).join(', ')}${site.allowlist.length > ALLOWLIST_QUOTED ? ', …' : ''})`;
  return {
    reason: `address ${refusal.clientIp} is not on ${siteNamed(site)}'s allowlist${listed}${removed}`,
    nextStep: `if ${refusal.clientIp} is the partner's, add ${refusal.clientIp} (or its network) to the site's allowlist`,
    audit,
  };
}

function endedKeyWords(site: SiteStanding): string {
  return site.endedKeys
    .map((key) =>
      key.revokedAt !== null
        ? `key ${key.keyId} (${key.maskedKey}) was revoked${key.revocation === undefined ? ` on ${instantWords(key.revokedAt)}` : by(key.revocation)}`
        : `key ${key.keyId} (${key.maskedKey}) expired on ${instantWords(key.expiresAt ?? '')}`,
    )
    .join('; ');
}

function invalidKey(site: SiteStanding): RefusalExplanation {
  if (site.endedKeys.length === 0) {
    return {
      reason: `the API key sent is no key of ${siteNamed(site)}: a typo, another site's key, or one never issued`,
      nextStep: "compare the last five characters of the partner's key with the site's keys, or issue them a new key",
      audit: pointer('key', site.siteId),
    };
  }
  const revoked = site.endedKeys.some((key) => key.revokedAt !== null);
  return {
    reason: `the API key sent is not an active key of ${siteNamed(site)}; its keys that ended most recently: ${endedKeyWords(site)}`,
    nextStep: 'if the partner still sends one of these keys, issue them a new key and ask them to switch to it; otherwise the key is unknown (a typo, or another site’s)',
    audit: pointer(revoked ? 'key.revoke' : 'key', site.siteId),
  };
}

const BODY_MISMATCH: RefusalExplanation = {
  reason: "the request body did not carry the same siteid and apikey as the Authorization header, or it was missing or unreadable",
  nextStep: "the partner must send a JSON body whose siteid and apikey equal the header's; the refusal they received names the rule they broke",
  audit: null,
};

function tokensOnly(site: SiteStanding): RefusalExplanation {
  return {
    reason: `${siteNamed(site)} accepts access tokens only${since(site.latest['site.auth'])}, so its API-key requests are refused (105)`,
    nextStep: "the partner must send access tokens (register their client under Token clients); or switch the site back to API keys and tokens",
    audit: pointer('site.auth', site.siteId),
  };
}

function apiKeysOff(refusal: CountedRefusal, site: SiteStanding, context: RefusalContext): RefusalExplanation {
  if (refusal.rehearsal) {
    return {
      reason: 'a dry-run brownout counted these requests: they were let through, and a real brownout would refuse them',
      nextStep: 'help the partner move to access tokens before API keys are switched off',
      audit: pointer('brownout', null),
    };
  }
  if (site.authMethod === 'tokens') return tokensOnly(site);
  const seen = Date.parse(refusal.lastSeen);
  const brownout = site.brownouts.find((span) => !span.dryRun && Date.parse(span.from) <= seen && seen < Date.parse(span.until));
  if (brownout !== undefined) {
    return {
      reason: `brownout ${brownout.brownoutId} switches API keys off from ${instantWords(brownout.from)} until ${instantWords(brownout.until)}`,
      nextStep: 'it ends by itself; cancel it on the Brownouts page to let API keys in now; the partner should move to access tokens',
      audit: pointer('brownout', null),
    };
  }
  const grace = site.graceUntil === null ? 'the site has no grace' : `the site's grace ended on ${instantWords(site.graceUntil)}`;
  return {
    reason: `API keys were retired on ${instantWords(context.sunsetAt)} and ${grace}`,
    nextStep: 'give the site a grace (on its page) while the partner moves to access tokens',
    audit: pointer('sunset', null),
  };
}

const FROM_OUR_ENDPOINT =
  'the partner must request their token from our token endpoint (the hand-over of their client says where)';

const TOKEN_NEXT_STEPS: { readonly [R in TokenRule]: string } = {
  'tokens-disabled': 'tell the operators: this service does not accept access tokens; until then the partner sends their API key',
  'keys-unavailable': "nothing is wrong with the partner's token: the service cannot get the issuer's signing keys; tell the operators",
  malformed: 'the partner must request a JWT access token for this API from our token endpoint, naming the resource',
  algorithm: FROM_OUR_ENDPOINT,
  type: FROM_OUR_ENDPOINT,
  'unknown-key': FROM_OUR_ENDPOINT,
  signature: FROM_OUR_ENDPOINT,
  issuer: FROM_OUR_ENDPOINT,
  audience: 'the partner must request the token for this API, naming the resource shown above',
  expired: 'the partner must request a new token before the old one expires, and not reuse an expired one',
  'not-yet-valid': "the partner's tokens are dated in the future: the issuer's clock or theirs is wrong; tell the operators",
  claims: 'the partner must request their token from our token endpoint, which writes every claim this API needs',
  revoked: 'the partner requests a new token: tokens issued after the revocation, or after their client was registered, are accepted',
  'too-old': 'the partner must request a new token, and ask for one that lives no longer than a day: this API refuses older or longer-lived ones',
};

const isTokenRule = (rule: string | null): rule is TokenRule => rule !== null && Object.hasOwn(TOKEN_NEXT_STEPS, rule);

function refusedToken(refusal: CountedRefusal, context: RefusalContext): RefusalExplanation {
  const client = refusal.clientId ?? 'unknown';
  const unsigned = refusal.signed === false ? ` (the token's signature did not verify, so "${client}" is only what the token claimed)` : '';
  if (!isTokenRule(refusal.rule)) return { reason: `client ${client}'s access token was refused${unsigned}`, nextStep: TOKEN_NEXT_STEPS.claims, audit: null };
  if (refusal.rule === 'revoked') {
    const site = context.site;
    return {
      reason: `client ${client}'s token was issued before ${site === undefined ? 'its site' : siteNamed(site)}'s tokens were revoked${by(site?.latest['site.revoke-tokens'])}`,
      nextStep: TOKEN_NEXT_STEPS.revoked,
      audit: pointer('site.revoke-tokens', site?.siteId ?? refusal.siteId),
    };
  }
  return {
    reason: `client ${client}'s access token was refused: ${tokenRuleDescription({ rule: refusal.rule, resource: context.audience })}${unsigned}`,
    nextStep: TOKEN_NEXT_STEPS[refusal.rule],
    audit: refusal.siteId === null ? null : pointer('token-client', refusal.siteId),
  };
}

function unregisteredClient(refusal: CountedRefusal, context: RefusalContext): RefusalExplanation {
  const client = refusal.clientId ?? 'unknown';
  const removal = context.client?.clientId === refusal.clientId ? context.client?.removal : undefined;
  const removed = removal === undefined ? '' : `: it was removed${removal.siteId === null ? '' : ` from site ${removal.siteId}`}${by(removal)}`;
  return {
    reason: `client ${client} is not registered for any site${removed}`,
    nextStep: `if client ${client} is the partner's, register it for their site under Token clients on the site's page`,
    audit: removal === undefined ? pointer('token-client', context.site?.siteId ?? null) : pointer('token-client.remove', removal.siteId),
  };
}

function withShadow(refusal: CountedRefusal, explanation: RefusalExplanation): RefusalExplanation {
  if (!refusal.shadow) return explanation;
  return { ...explanation, reason: `${explanation.reason} (shadow mode let these requests through: this is what would have been refused)` };
}

export function explainRefusal(refusal: CountedRefusal, context: RefusalContext): RefusalExplanation {
  const site = context.site;
  const explained = ((): RefusalExplanation => {
    if (refusal.errorId === 106) return refusedToken(refusal, context);
    if (refusal.errorId === 107) return unregisteredClient(refusal, context);
    if (site === undefined) return unknownSite(refusal);
    if (refusal.errorId === 101) return site.enabled ? unknownSite(refusal) : disabledSite(site);
    if (refusal.errorId === 102) return invalidKey(site);
    if (refusal.errorId === 103) return notOnAllowlist(refusal, site);
    if (refusal.errorId === 104) return BODY_MISMATCH;
    if (refusal.errorId === 105) return apiKeysOff(refusal, site, context);
    return { reason: `error ${refusal.errorId}`, nextStep: 'ask the operators', audit: null };
  })();
  return withShadow(refusal, explained);
}

/** What refuses the site's partner whatever they send, even before a refusal is counted. */
export function siteStandingNotes(site: SiteStanding): RefusalExplanation[] {
  const notes: RefusalExplanation[] = [];
  if (!site.enabled) notes.push(disabledSite(site));
  if (site.authMethod === 'tokens') notes.push(tokensOnly(site));
  if (site.allowlist.length === 0) {
    notes.push({
      reason: `${siteNamed(site)}'s allowlist is empty: it admits no address, so every request is refused (103)`,
      nextStep: "add the partner's addresses (or networks) to the site's allowlist",
      audit: pointer('ip', site.siteId),
    });
  }
  return notes;
}
