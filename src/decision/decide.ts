import { hashApiKey, maskApiKey } from './api-key.js';
import { bodyCredentialsRule } from './body-credentials.js';
import { parseClientIp } from '../allowlist/client-ip.js';
import { parseAuthorization } from './parse-authorization.js';
import { sunsetRefusal } from './sunset.js';
import type { AuthMethod, CheckInput, ClientId, CredentialSnapshot, Decision, Denial, SiteCredentials, SiteId, SunsetPolicy, TokenVerdict } from './types.js';

const deny = (denial: Denial): Decision => ({ outcome: 'deny', denial });

function admitsClient(site: SiteCredentials, input: CheckInput): { readonly admitted: boolean; readonly clientIp: string } {
  const clientIp = parseClientIp(input.clientAddress);
  return { admitted: clientIp !== undefined && site.allowlist.check(clientIp.address, clientIp.family), clientIp: clientIp?.address ?? 'unknown' };
}

/**
 * The whole decision for one request: pure, no I/O, no clock but `now` (epoch ms). An API-key request
 * is checked in a fixed precedence, 108 → 101 → 103 → 102 → 104 → 105:
 *   108  the Authorization header is missing or malformed         (spec, Errors 108)
 *   101  the site is unknown or disabled                           (spec, Errors 101)
 *   103  the client IP is not on the site's allowlist              (spec, Authentication 6)
 *   102  the key is not an active, unexpired key of the site       (spec, Errors 102)
 *   104  the body's siteid and apikey do not equal the header's    (spec, Authentication 4)
 *   105  valid credentials, but the site has moved to tokens, or API keys are in a brownout or
 *        retired (spec, Versioning 1)
 * The allowlist comes before the key so that a stolen key cannot be tried from outside the allowlist,
 * and 105 comes last so that it tells nobody without valid credentials anything.
 */
export function decide(input: CheckInput, snapshot: CredentialSnapshot, now: number, sunset: SunsetPolicy): Decision {
  const header = parseAuthorization(input.authorization);
  if (!header.ok) return deny({ errorId: 108, rule: header.rule });
  if (header.method === 'token') return decideToken(input, input.bearer, snapshot);
  const { siteId, apiKey } = header;
  const maskedKey = maskApiKey(header.submittedKey);

  const site = snapshot.site(siteId);
  if (site === undefined || !site.enabled) return deny({ errorId: 101, siteId, maskedKey });

  const client = admitsClient(site, input);
  if (!client.admitted) return deny({ errorId: 103, siteId, clientIp: client.clientIp, maskedKey });

  const key = site.keysByHash.get(hashApiKey(apiKey));
  if (key === undefined || (key.expiresAt !== null && now >= key.expiresAt)) {
    return deny({ errorId: 102, siteId, maskedKey });
  }

  const bodyRefusal = bodyCredentialsRule(input.body, input.bodyPartial, input.bodyCredentials, { siteId, apiKey });
  if (bodyRefusal !== undefined) return deny({ errorId: 104, siteId, keyId: key.keyId, maskedKey, ...bodyRefusal });

  const keyId = key.keyId;
  if (site.authMethod === 'tokens') {
    return deny({ errorId: 105, siteId, keyId, maskedKey, reason: 'tokens-only', sunsetAt: sunset.sunsetAt, guideUrl: sunset.guideUrl });
  }
  const refusal = sunsetRefusal(site, snapshot.brownouts, sunset, now);
  if (refusal?.kind === 'refuse') {
    return deny({ errorId: 105, siteId, keyId, maskedKey, ...refusal.denial, sunsetAt: sunset.sunsetAt, guideUrl: sunset.guideUrl });
  }
  if (refusal?.kind === 'rehearse') return { outcome: 'allow', method: 'api_key', siteId, keyId, rehearsal: { brownoutId: refusal.brownoutId } };
  return { outcome: 'allow', method: 'api_key', siteId, keyId };
}

/** Precedence 106 → 107 → 106 (revoked) → 101 → 103 → 104; brownouts and the sunset do not apply to tokens. */
function decideToken(input: CheckInput, verdict: TokenVerdict | undefined, snapshot: CredentialSnapshot): Decision {
  if (verdict === undefined) return deny({ errorId: 106, rule: 'tokens-disabled' });
  if (!verdict.valid) {
    const { rule, resource, claimant } = verdict;
    return deny({ errorId: 106, rule, ...(resource !== undefined && { resource }), ...(claimant !== undefined && { claimant }) });
  }
  const { clientId, issuedAt } = verdict.claims;

  const site = snapshot.siteOfTokenClient(clientId);
  if (site === undefined) return deny({ errorId: 107, clientId });
  const siteId: SiteId = site.siteId;
  if (issuedAt < tokensNotBefore(site, clientId)) return deny({ errorId: 106, rule: 'revoked', siteId, clientId });

  if (!site.enabled) return deny({ errorId: 101, siteId, clientId });

  const client = admitsClient(site, input);
  if (!client.admitted) return deny({ errorId: 103, siteId, clientIp: client.clientIp, clientId });

  const bodyRefusal = bodyCredentialsRule(input.body, input.bodyPartial, input.bodyCredentials, { siteId });
  if (bodyRefusal !== undefined) return deny({ errorId: 104, siteId, clientId, ...bodyRefusal });

  return { outcome: 'allow', method: 'token', siteId, clientId };
}

/** Epoch ms before which the client's tokens are refused. */
function tokensNotBefore(site: SiteCredentials, clientId: ClientId): number {
  // A client found through the site is among its clients; were it not, nothing it signed would count.
  const registeredAt = site.tokenClients.get(clientId) ?? Number.POSITIVE_INFINITY;
  return site.tokensNotBefore === null ? registeredAt : Math.max(registeredAt, site.tokensNotBefore);
}

/** A 108 header has none. */
export function authMethodOf(decision: Decision): AuthMethod | undefined {
  if (decision.outcome === 'allow') return decision.method;
  const { denial } = decision;
  if (denial.errorId === 108) return undefined;
  if (denial.errorId === 106 || denial.errorId === 107 || ('clientId' in denial && denial.clientId !== undefined)) return 'token';
  return 'api_key';
}
