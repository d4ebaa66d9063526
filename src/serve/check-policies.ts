import type { Config } from '../config.js';
import type { SunsetPolicy } from '../decision/types.js';
import { sunsetNotice, type AllowedResponsePolicy } from '../envoy/check-response.js';

/** What a check is decided and answered with besides the snapshot, fixed by configuration. */
export interface CheckPolicies {
  readonly sunset: SunsetPolicy;
  readonly allowedResponse: AllowedResponsePolicy;
}

/** The one place `serve` and `explain` take them from, so that explain answers as the service does. */
export function checkPolicies(config: Config): CheckPolicies {
  return {
    sunset: { sunsetAt: config.apiKeySunsetAt, enforce: config.apiKeySunsetEnforce, guideUrl: config.migrationGuideUrl },
    allowedResponse: sunsetNotice({
      deprecatedAt: config.apiKeyDeprecatedAt,
      sunsetAt: config.apiKeySunsetAt,
      guideUrl: config.migrationGuideUrl,
      stripAuthorization: config.stripAuthorization,
    }),
  };
}
