import type { Config } from '../config.js';
import type { SunsetPolicy } from '../decision/types.js';
import { configuredSunsetPolicy } from '../store/sunset-policy.js';
import { sunsetNotice, type AllowedResponsePolicy } from './check-response.js';

export interface CheckPolicies {
  readonly sunset: SunsetPolicy;
  readonly allowedResponse: AllowedResponsePolicy;
}

/** For `serve` and `explain` alike; deprecation: APIKEY_DEPRECATED_AT, else the sunset, never after it (RFC 9745). */
export function checkPolicies(config: Config, sunset: SunsetPolicy = configuredSunsetPolicy(config)): CheckPolicies {
  const deprecatedAt = config.sunsetVariablesSet.includes('APIKEY_DEPRECATED_AT') ? Math.min(config.apiKeyDeprecatedAt, sunset.sunsetAt) : sunset.sunsetAt;
  return {
    sunset,
    allowedResponse: sunsetNotice({ deprecatedAt, sunsetAt: sunset.sunsetAt, guideUrl: sunset.guideUrl, stripAuthorization: config.stripAuthorization }),
  };
}
