import { ERROR_CATALOGUE } from '../decision/error-catalogue.js';
import type { DecisionEvent } from '../envoy/authorization-service.js';
import type { Logger } from './logger.js';

// Values from a CheckRequest are hostile: never let one blow up a log line.
const MAX_LOGGED_CHARS = 128;
const clip = (value: string | undefined): string | undefined =>
  value === undefined || value.length <= MAX_LOGGED_CHARS ? value : `${value.slice(0, MAX_LOGGED_CHARS)}…`;

const HINT_INTERVAL_MS = 60_000;

/**
 * One log line per denial (site, masked key, source IP, error id, x-request-id), allows at debug.
 * Reads the decision only; never the Authorization header or a key.
 */
export function createDecisionLog(logger: Logger, now: () => number = Date.now): (event: DecisionEvent) => void {
  let lastBodyHintAt = -Infinity;
  return ({ requestId, input, decision, durationSeconds }) => {
    const common = { requestId: clip(requestId), sourceIp: clip(input.clientAddress), durationSeconds };
    if (decision.outcome === 'allow') {
      if (decision.rehearsal) {
        logger.info(
          { ...common, event: 'check.rehearsed', siteId: decision.siteId, keyId: decision.keyId, brownoutId: decision.rehearsal.brownoutId },
          'check allowed; a dry-run brownout would have refused it (105)',
        );
      } else {
        logger.debug({ ...common, event: 'check.allowed', siteId: decision.siteId, keyId: decision.keyId }, 'check allowed');
      }
      return;
    }
    const { denial } = decision;
    logger.info(
      {
        ...common,
        event: 'check.denied',
        errorId: denial.errorId,
        code: ERROR_CATALOGUE[denial.errorId].code,
        ...('siteId' in denial ? { siteId: denial.siteId } : {}),
        ...('maskedKey' in denial ? { maskedKey: denial.maskedKey } : {}),
        ...('keyId' in denial ? { keyId: denial.keyId } : {}),
        ...('clientIp' in denial ? { sourceIp: denial.clientIp } : {}),
        ...('rule' in denial ? { rule: denial.rule } : {}),
        ...('reason' in denial ? { reason: denial.reason, brownoutId: denial.brownout?.id } : {}),
      },
      'check denied',
    );
    if (denial.errorId === 104 && denial.rule === 'body-not-forwarded' && now() - lastBodyHintAt >= HINT_INTERVAL_MS) {
      lastBodyHintAt = now();
      logger.warn(
        { event: 'hint.with_request_body' },
        'requests declare a body but Envoy sent none: enable with_request_body on the ext_authz filter ' +
          '(max_request_bytes, allow_partial_message: false) so siteid and apikey in the body can be checked',
      );
    }
  };
}
