import { hashApiKey, maskApiKey } from './api-key.js';
import { bodyCredentialsRule } from './body-credentials.js';
import { parseClientIp } from './client-ip.js';
import { parseAuthorization } from './parse-authorization.js';
import { sunsetRefusal } from './sunset.js';
import type { CheckInput, CredentialSnapshot, Decision, Denial, SunsetPolicy } from './types.js';

const deny = (denial: Denial): Decision => ({ outcome: 'deny', denial });

/**
 * The whole authentication decision for one request: pure, no I/O, no clock but `now` (epoch ms).
 * The checks run in a fixed precedence, 108 → 101 → 103 → 102 → 104 → 105:
 *   108  the Authorization header is missing or malformed         (spec, Errors 108)
 *   101  the site is unknown or disabled                           (spec, Errors 101)
 *   103  the client IP is not on the site's allowlist              (spec, Authentication 6)
 *   102  the key is not an active, unexpired key of the site       (spec, Errors 102)
 *   104  the body's siteid and apikey do not equal the header's    (spec, Authentication 4)
 *   105  valid credentials, but API keys are in a brownout or retired (spec, Versioning 1)
 * The allowlist comes before the key so that a stolen key cannot be tried from outside the allowlist,
 * and 105 comes last so that it tells nobody without valid credentials anything.
 */
export function decide(input: CheckInput, snapshot: CredentialSnapshot, now: number, sunset: SunsetPolicy): Decision {
  const header = parseAuthorization(input.authorization);
  if (!header.ok) return deny({ errorId: 108, rule: header.rule });
  const { siteId, apiKey } = header;
  const maskedKey = maskApiKey(header.submittedKey);

  const site = snapshot.site(siteId);
  if (site === undefined || !site.enabled) return deny({ errorId: 101, siteId, maskedKey });

  const clientIp = parseClientIp(input.clientAddress);
  if (clientIp === undefined || !site.allowlist.check(clientIp.address, clientIp.family)) {
    return deny({ errorId: 103, siteId, clientIp: clientIp?.address ?? 'unknown', maskedKey });
  }

  const key = site.keysByHash.get(hashApiKey(apiKey));
  if (key === undefined || (key.expiresAt !== null && now >= key.expiresAt)) {
    return deny({ errorId: 102, siteId, maskedKey });
  }

  const bodyRefusal = bodyCredentialsRule(input.body, input.bodyPartial, input.bodyCredentials, { siteId, apiKey });
  if (bodyRefusal !== undefined) return deny({ errorId: 104, siteId, keyId: key.keyId, maskedKey, ...bodyRefusal });

  const refusal = sunsetRefusal(site, snapshot.brownouts, sunset, now);
  if (refusal?.kind === 'refuse') {
    return deny({ errorId: 105, siteId, keyId: key.keyId, maskedKey, ...refusal.denial, sunsetAt: sunset.sunsetAt, guideUrl: sunset.guideUrl });
  }
  if (refusal?.kind === 'rehearse') return { outcome: 'allow', siteId, keyId: key.keyId, rehearsal: { brownoutId: refusal.brownoutId } };
  return { outcome: 'allow', siteId, keyId: key.keyId };
}
