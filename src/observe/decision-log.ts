import { RateLimit } from '../common/rate-limit.js';
import { ERROR_CATALOGUE, HEADER_RULE_WORDS } from '../decision/error-catalogue.js';
import type { HeaderRule } from '../decision/types.js';
import type { CheckEvent, DeniedCheckEvent } from './check-event.js';
import type { Logger } from './logger.js';

const HINT_INTERVAL_MS = 60_000;


/** Why the check was refused, in words for the person reading the log. */
function reasonInWords(event: DeniedCheckEvent): string {
  switch (event.errorId) {
    case 108:
      return HEADER_RULE_WORDS[event.rule as HeaderRule];
    case 101:
      return `site ${event.siteId} is not a registered site, or it is disabled`;
    case 106:
    case 107:
      return event.errorMessage;
    case 103:
      return `client IP ${event.clientIp ?? '(none)'} is not on site ${event.siteId}'s allowlist`;
    case 102:
      return `API key ${event.maskedKey} is not an active key of site ${event.siteId} (unknown, revoked or expired)`;
    case 104:
    case 105:
      return event.errorMessage;
  }
}

/** What a line says of any check, allowed or denied. */
function checkFields(event: CheckEvent) {
  return {
    requestId: event.requestId,
    siteId: event.siteId,
    authMethod: event.authMethod,
    keyId: event.keyId,
    clientId: event.clientId,
    maskedKey: event.maskedKey,
    clientIp: event.clientIp,
    durationSeconds: event.durationSeconds,
    bodyBytes: event.bodyBytes,
  };
}

export interface DecisionLogOptions {
  /** LOG_ALLOWED_SAMPLE_RATE: the share of allowed checks logged at info, 0..1. */
  readonly allowedSampleRate: number;
  readonly random?: () => number;
  readonly now?: () => number;
}

/**
 * One JSON line per denial (request id, site, masked key, key id, client IP, error id, rule in words,
 * duration) and a sample of allows. It reads the key-free CheckEvent only, so it cannot log the
 * Authorization header, a full key or the body.
 */
export function createDecisionLog(logger: Logger, options: DecisionLogOptions): (event: CheckEvent) => void {
  const { allowedSampleRate, random = Math.random, now = Date.now } = options;
  const bodyHint = new RateLimit(HINT_INTERVAL_MS, now);
  return (event) => {
    if (event.outcome === 'allowed') {
      if (event.rehearsalBrownoutId !== undefined) {
        logger.info(
          { ...checkFields(event), event: 'check.rehearsed', brownoutId: event.rehearsalBrownoutId },
          'check allowed; a dry-run brownout would have refused it (105)',
        );
        return;
      }
      // random() < 0 never holds, so the default rate 0 logs no allow at info.
      if (random() < allowedSampleRate) logger.info({ ...checkFields(event), event: 'check.allowed', sampleRate: allowedSampleRate }, 'check allowed');
      else if (logger.isLevelEnabled('debug')) logger.debug({ ...checkFields(event), event: 'check.allowed' }, 'check allowed');
      return;
    }
    const denied = { errorId: event.errorId, code: ERROR_CATALOGUE[event.errorId].code, rule: event.rule, reason: reasonInWords(event) };
    if (event.shadow) logger.info({ ...checkFields(event), event: 'check.shadow-denied', shadow: true, ...denied }, 'check allowed by SHADOW_MODE; it would have been denied');
    else logger.info({ ...checkFields(event), event: 'check.denied', ...denied }, 'check denied');
    if (event.rule === 'body-not-forwarded' && bodyHint.open()) {
      logger.warn(
        { event: 'hint.with_request_body' },
        'requests declare a body but Envoy sent none: enable with_request_body on the ext_authz filter ' +
          '(max_request_bytes, allow_partial_message: false) so siteid and apikey in the body can be checked',
      );
    }
  };
}
