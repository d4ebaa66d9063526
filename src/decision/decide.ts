import { hashApiKey, maskApiKey } from './api-key.js';
import { bodyCredentialsRule } from './body-credentials.js';
import { parseClientIp } from './client-ip.js';
import { parseAuthorization } from './parse-authorization.js';
import type { CheckInput, CredentialSnapshot, Decision, Denial } from './types.js';

const deny = (denial: Denial): Decision => ({ outcome: 'deny', denial });

/**
 * The whole authentication decision for one request: pure, no I/O, no clock but `now` (epoch ms).
 * The checks run in a fixed precedence, 108 → 101 → 103 → 102 → 104:
 *   108  the Authorization header is missing or malformed         (spec, Errors 108)
 *   101  the site is unknown or disabled                           (spec, Errors 101)
 *   103  the client IP is not on the site's allowlist              (spec, Authentication 6)
 *   102  the key is not an active, unexpired key of the site       (spec, Errors 102)
 *   104  the body's siteid and apikey do not equal the header's    (spec, Authentication 4)
 * The allowlist comes before the key so that a stolen key cannot be tried from outside the allowlist.
 */
export function decide(input: CheckInput, snapshot: CredentialSnapshot, now: number): Decision {
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

  const refusal = bodyCredentialsRule(input.body, input.bodyPartial, input.bodyCredentials, { siteId, apiKey });
  if (refusal !== undefined) return deny({ errorId: 104, siteId, keyId: key.keyId, maskedKey, ...refusal });

  return { outcome: 'allow', siteId, keyId: key.keyId };
}
