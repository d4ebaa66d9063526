import { RateLimit } from '../common/rate-limit.js';
import { ERROR_CATALOGUE, loggedReason, reasonIsMessage } from '../decision/error-catalogue.js';
import type { CheckEvent, DeniedCheckEvent } from './check-event.js';
import type { Logger } from './logger.js';

const HINT_INTERVAL_MS = 60_000;

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
  readonly allowedSampleRate: number;
  /** LOG_REPEAT_WINDOW_SECONDS; 0 logs every denial. */
  readonly repeatWindowSeconds: number;
  readonly random?: () => number;
  readonly now?: () => number;
}

export interface DecisionLog {
  record(event: CheckEvent): void;
  close(): void;
}

/** Windows of repeats counted at once: beyond, a denial is logged on its own line as if none were. */
export const REPEAT_WINDOWS_MAX = 10_000;

/** What makes denials read the same in the log; the message counts only where these fields do not determine it. */
function sameLineKey(event: DeniedCheckEvent): string {
  const key = `${event.errorId}|${event.shadow}|${event.siteId}|${event.clientIp}|${event.maskedKey}|${event.clientId}|${event.keyId}|${event.rule}`;
  return reasonIsMessage(event.errorId) ? `${key}|${event.errorMessage}` : key;
}

/** sameLineKey's fields compared one by one, without building a key: this runs on every denial. */
function readsAs(event: DeniedCheckEvent, earlier: DeniedCheckEvent): boolean {
  return (
    event.errorId === earlier.errorId &&
    event.shadow === earlier.shadow &&
    event.siteId === earlier.siteId &&
    event.clientIp === earlier.clientIp &&
    event.maskedKey === earlier.maskedKey &&
    event.clientId === earlier.clientId &&
    event.keyId === earlier.keyId &&
    event.rule === earlier.rule &&
    (!reasonIsMessage(event.errorId) || event.errorMessage === earlier.errorMessage)
  );
}

interface RepeatWindow {
  readonly first: DeniedCheckEvent;
  readonly openedAt: number;
  repeats: number;
  lastRequestId: string | undefined;
  ended: boolean;
}

/**
 * One JSON line per denial and a sample of allows. A repeated denial (a retry loop, a flood) is logged once per
 * window and the rest counted on one `check.denied.repeated` line when the window ends.
 */
export function createDecisionLog(logger: Logger, options: DecisionLogOptions): DecisionLog {
  const { allowedSampleRate, random = Math.random, now = Date.now } = options;
  const windowMs = options.repeatWindowSeconds * 1000;
  const bodyHint = new RateLimit(HINT_INTERVAL_MS, now);
  const keysHint = new RateLimit(HINT_INTERVAL_MS, now);
  const windows = new Map<string, RepeatWindow>();
  /** The window the last denial went to: a flood repeats one denial, which then costs no key. */
  let latest: RepeatWindow | undefined;
  let sweeper: NodeJS.Timeout | undefined;

  const logRepeats = (window: RepeatWindow): void => {
    if (window.repeats === 0) return;
    const { first } = window;
    logger.info(
      {
        ...checkFields(first),
        requestId: undefined,
        durationSeconds: undefined,
        bodyBytes: undefined,
        event: first.shadow ? 'check.shadow-denied.repeated' : 'check.denied.repeated',
        ...(first.shadow && { shadow: true }),
        ...deniedFields(first),
        repeats: window.repeats,
        firstRequestId: first.requestId,
        lastRequestId: window.lastRequestId,
        windowSeconds: options.repeatWindowSeconds,
      },
      `the denial logged before (request ${first.requestId ?? 'without id'}) repeated ${window.repeats} more times`,
    );
  };
  const end = (key: string, window: RepeatWindow): void => {
    windows.delete(key);
    window.ended = true;
    logRepeats(window);
  };
  // Windows are kept in the order they opened.
  const sweep = (at: number): void => {
    for (const [key, window] of windows) {
      if (at - window.openedAt < windowMs) break;
      end(key, window);
    }
    if (windows.size === 0 && sweeper !== undefined) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  };
  /** True when the denial was only counted, not logged. */
  const counted = (event: DeniedCheckEvent): boolean => {
    if (windowMs === 0) return false;
    const at = now();
    const remembered = latest !== undefined && !latest.ended && readsAs(event, latest.first) ? latest : undefined;
    let key: string | undefined;
    const window = remembered ?? windows.get((key = sameLineKey(event)));
    if (window !== undefined && at - window.openedAt < windowMs) {
      window.repeats++;
      window.lastRequestId = event.requestId;
      latest = window;
      return true;
    }
    key ??= sameLineKey(event);
    if (window !== undefined) end(key, window);
    if (windows.size < REPEAT_WINDOWS_MAX) {
      latest = { first: event, openedAt: at, repeats: 0, lastRequestId: undefined, ended: false };
      windows.set(key, latest);
      sweeper ??= setInterval(() => sweep(now()), windowMs).unref();
    }
    return false;
  };

  const logDenial = (event: DeniedCheckEvent): void => {
    if (counted(event)) return;
    if (event.shadow) logger.info({ ...checkFields(event), event: 'check.shadow-denied', shadow: true, ...deniedFields(event) }, 'check allowed by SHADOW_MODE; it would have been denied');
    else logger.info({ ...checkFields(event), event: 'check.denied', ...deniedFields(event) }, 'check denied');
    if (event.rule === 'body-not-forwarded' && bodyHint.open()) {
      logger.warn(
        { event: 'hint.with_request_body' },
        'requests declare a body but Envoy sent none: enable with_request_body on the ext_authz filter ' +
          '(max_request_bytes, allow_partial_message: false) so siteid and apikey in the body can be checked',
      );
    }
    if (event.rule === 'keys-unavailable' && keysHint.open()) {
      logger.warn(
        { event: 'hint.token_issuer_keys' },
        "access tokens are refused (106, keys-unavailable): this process holds none of the token issuer's signing keys, " +
          'neither fetched nor stored in the database; check that TOKEN_JWKS_URL (or TOKEN_ISSUER) is reachable from here ' +
          '(egress NetworkPolicy, DNS); API keys are not affected (docs/tokens.md, "When the issuer is down")',
      );
    }
  };

  return {
    record(event) {
      if (event.outcome === 'denied') {
        logDenial(event);
        return;
      }
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
    },
    close() {
      sweep(Infinity);
    },
  };
}

function deniedFields(event: DeniedCheckEvent) {
  return { errorId: event.errorId, code: ERROR_CATALOGUE[event.errorId].code, rule: event.rule, reason: loggedReason(event) };
}
