import { authMethodOf } from '../decision/decide.js';
import { denialMessage } from '../decision/error-catalogue.js';
import type { AuthMethod, BodyRule, CheckInput, ClientId, Decision, ErrorId, HeaderRule, KeyId, SiteId, SunsetReason, TokenClaimant, TokenRule, UndecidedReason } from '../decision/types.js';
import { clipForLog } from '../common/log-text.js';

interface CheckEventFacts {
  readonly siteId: SiteId | undefined;
  /** In the snapshot and enabled (past 101): only then is its id one we registered, not one a client made up. */
  readonly siteKnown: boolean;
  readonly keyId: KeyId | undefined;
  readonly authMethod: AuthMethod | undefined;
  readonly clientId: ClientId | undefined;
  /** `*****` and the last five characters of the submitted key (spec, Errors 102); not for allows. */
  readonly maskedKey: string | undefined;
  readonly clientIp: string | undefined;
  readonly requestId: string | undefined;
  readonly bodyBytes: number | undefined;
  readonly durationSeconds: number;
}

interface AllowedCheckEvent extends CheckEventFacts {
  readonly outcome: 'allowed';
  readonly shadow: false;
  readonly siteId: SiteId;
  readonly authMethod: AuthMethod;
  readonly rehearsalBrownoutId: string | undefined;
  readonly sunsetReason: undefined;
  readonly errorId: undefined;
  readonly rule: undefined;
  readonly errorMessage: undefined;
  readonly claimant: undefined;
}

export interface DeniedCheckEvent extends CheckEventFacts {
  readonly outcome: 'denied';
  /** SHADOW_MODE: answered as an allow; this denial is what would have been sent. */
  readonly shadow: boolean;
  readonly rehearsalBrownoutId: undefined;
  readonly sunsetReason: SunsetReason | undefined;
  readonly errorId: ErrorId;
  readonly rule: HeaderRule | TokenRule | BodyRule | undefined;
  /** The message the partner received; it quotes the key masked only. */
  readonly errorMessage: string;
  readonly claimant: TokenClaimant | undefined;
}

/** Never the request as received: without the header or the body in hand, no observer can log a key by mistake. */
export type CheckEvent = AllowedCheckEvent | DeniedCheckEvent;

/** A check that got no decision: Envoy's failure_mode_allow / status_on_error take over. */
export interface UndecidedCheckEvent {
  readonly requestId: string | undefined;
  readonly reason: 'unavailable' | 'internal' | UndecidedReason;
  readonly durationSeconds: number;
}

interface ViewedRequest {
  readonly requestId: string | undefined;
  readonly input: CheckInput;
}

function claimantOf(denial: Extract<Decision, { outcome: 'deny' }>['denial']): TokenClaimant | undefined {
  if (denial.errorId === 107) return { clientId: clipForLog(denial.clientId) ?? '', signed: true };
  if (denial.errorId !== 106) return undefined;
  if (denial.clientId !== undefined) return { clientId: clipForLog(denial.clientId) ?? '', signed: true };
  return denial.claimant;
}

function bodyBytes({ body }: CheckInput): number | undefined {
  if (body.kind === 'text') return Buffer.byteLength(body.text, 'utf8');
  if (body.kind === 'too-large') return body.bytes;
  return body.kind === 'empty' ? 0 : undefined;
}

/** Runs on every check, so it builds plain literals (a spread costs microseconds here). */
export function checkEvent(request: ViewedRequest, decision: Decision, durationSeconds: number, shadow = false, message?: string): CheckEvent {
  const requestId = clipForLog(request.requestId);
  const clientIp = clipForLog(request.input.clientAddress);
  const size = bodyBytes(request.input);
  if (decision.outcome === 'allow') {
    const byKey = decision.method === 'api_key';
    return {
      outcome: 'allowed',
      shadow: false,
      errorId: undefined,
      rule: undefined,
      errorMessage: undefined,
      siteId: decision.siteId,
      siteKnown: true,
      authMethod: decision.method,
      keyId: byKey ? decision.keyId : undefined,
      clientId: byKey ? undefined : clipForLog(decision.clientId),
      rehearsalBrownoutId: byKey ? decision.rehearsal?.brownoutId : undefined,
      sunsetReason: undefined,
      claimant: undefined,
      maskedKey: undefined,
      clientIp,
      requestId,
      bodyBytes: size,
      durationSeconds,
    };
  }
  const { denial } = decision;
  return {
    outcome: 'denied',
    shadow,
    errorId: denial.errorId,
    rule: 'rule' in denial ? denial.rule : undefined,
    errorMessage: message ?? denialMessage(denial),
    siteId: 'siteId' in denial ? denial.siteId : undefined,
    // 101 is "unknown or disabled": the id may be anything a client sent. A token's site is one we
    // registered, but it comes with 106 only for a revoked token, which is as good as known.
    siteKnown: 'siteId' in denial && denial.siteId !== undefined && denial.errorId !== 101,
    authMethod: authMethodOf(decision),
    clientId: 'clientId' in denial ? clipForLog(denial.clientId) : undefined,
    rehearsalBrownoutId: undefined,
    sunsetReason: denial.errorId === 105 ? denial.reason : undefined,
    claimant: claimantOf(denial),
    keyId: 'keyId' in denial ? denial.keyId : undefined,
    maskedKey: 'maskedKey' in denial ? denial.maskedKey : undefined,
    clientIp,
    requestId,
    bodyBytes: size,
    durationSeconds,
  };
}
