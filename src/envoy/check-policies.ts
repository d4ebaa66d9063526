import type { Config } from '../config.js';
import type { SunsetPolicy } from '../decision/types.js';
import { configuredSunsetPolicy } from '../store/sunset-policy.js';
import { sunsetNotice, type AllowedResponsePolicy } from './check-response.js';

export interface CheckPolicies {
  readonly sunset: SunsetPolicy;
  readonly allowedResponse: AllowedResponsePolicy;
}

/**
 * What a check is decided and answered with besides the snapshot, for `serve` and `explain` alike. The
 * deprecation date is APIKEY_DEPRECATED_AT if set, else the sunset, never later than it (RFC 9745).
 */
export function checkPolicies(config: Config, sunset: SunsetPolicy = configuredSunsetPolicy(config)): CheckPolicies {
  const deprecatedAt = config.sunsetVariablesSet.includes('APIKEY_DEPRECATED_AT') ? Math.min(config.apiKeyDeprecatedAt, sunset.sunsetAt) : sunset.sunsetAt;
  return {
    sunset,
    allowedResponse: sunsetNotice({ deprecatedAt, sunsetAt: sunset.sunsetAt, guideUrl: sunset.guideUrl, stripAuthorization: config.stripAuthorization }),
  };
}
