import type { Config, SunsetVariable } from '../config.js';
import type { SunsetPolicy } from '../decision/types.js';
import { checkPolicies, type CheckPolicies } from '../envoy/check-policies.js';
import type { Logger } from '../observe/logger.js';

/** The sunset variables this process's environment set to something other than the database holds. */
export function sunsetDisagreements(config: Config, stored: SunsetPolicy): SunsetVariable[] {
  const differs: Partial<Record<SunsetVariable, boolean>> = {
    APIKEY_SUNSET_AT: config.apiKeySunsetAt !== stored.sunsetAt,
    APIKEY_SUNSET_ENFORCE: config.apiKeySunsetEnforce !== stored.enforce,
    MIGRATION_GUIDE_URL: config.migrationGuideUrl !== stored.guideUrl,
  };
  return config.sunsetVariablesSet.filter((name) => differs[name] === true);

}

/** Built once per change of the stored sunset policy; an environment that disagrees is warned of once and overruled. */
export class FollowedCheckPolicies {
  /** `current`'s stored policy as text: each full load reads a new, usually equal, one. */
  private currentOf: string | undefined;
  private current: CheckPolicies;
  private lastStored: SunsetPolicy | undefined;
  private readonly warned = new Set<string>();

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
  ) {
    this.current = checkPolicies(config);
  }

  /** Undefined (none stored): the last one stored, or before any the environment's. */
  of(stored: SunsetPolicy | undefined): CheckPolicies {
    // Called twice on every check: the same object as last time costs one comparison.
    if (stored === undefined || stored === this.lastStored) return this.current;
    this.lastStored = stored;
    const said = JSON.stringify([stored.sunsetAt, stored.enforce, stored.guideUrl ?? null]);
    if (said === this.currentOf) return this.current;
    this.currentOf = said;
    this.current = checkPolicies(this.config, { sunsetAt: stored.sunsetAt, enforce: stored.enforce, guideUrl: stored.guideUrl });
    const differing = sunsetDisagreements(this.config, stored);
    if (differing.length > 0 && !this.warned.has(said)) {
      this.warned.add(said);
      this.logger.warn(
        {
          variables: differing,
          database: { sunsetAt: new Date(stored.sunsetAt).toISOString(), enforce: stored.enforce, guideUrl: stored.guideUrl ?? null },
        },
        `${differing.join(', ')} in this process's environment disagree with the sunset policy in the database; following the database ` +
          '(`sitekey-authz sunset show`); the variables only seed a database that holds none',
      );
    }
    return this.current;
  }
}
