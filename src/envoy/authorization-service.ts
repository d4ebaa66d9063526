import { status as GrpcStatus, type handleUnaryCall, type ServerErrorResponse } from '@grpc/grpc-js';
import type { CheckInput, Decision } from '../decision/types.js';
import type { Logger } from '../observe/logger.js';
import { toCheckResponse } from './check-response.js';
import type { CheckRequestMessage, CheckResponseMessage } from './messages.js';
import { viewCheckRequest, type RequestSummary, type RequestViewOptions } from './request-view.js';

/** A decision that was made and sent to Envoy; observers (logs, metrics) read it, never change it. */
export interface DecisionEvent {
  readonly requestId: string | undefined;
  readonly request: RequestSummary;
  readonly input: CheckInput;
  readonly decision: Decision;
  /** From receiving the CheckRequest to having the CheckResponse ready. */
  readonly durationSeconds: number;
}

/** A check that got no decision: Envoy's failure_mode_allow / status_on_error take over. */
export interface CheckFailureEvent {
  readonly requestId: string | undefined;
  /** unavailable: no credential data to decide on; internal: an unexpected error. */
  readonly reason: 'unavailable' | 'internal';
  readonly durationSeconds: number;
}

export interface AuthorizationServiceDeps extends RequestViewOptions {
  /** The decision on current credential data; undefined when there is none to decide on yet. */
  readonly authorize: (input: CheckInput) => Decision | undefined;
  readonly onDecision?: (event: DecisionEvent) => void;
  readonly onFailure?: (event: CheckFailureEvent) => void;
  readonly logger: Logger;
}

/** The Authorization service implementation, ready for grpc.Server#addService. */
export type AuthorizationImplementation = {
  readonly Check: handleUnaryCall<CheckRequestMessage, CheckResponseMessage>;
};

function secondsSince(started: bigint): number {
  return Number(process.hrtime.bigint() - started) / 1e9;
}

function rpcError(code: GrpcStatus, details: string): Partial<ServerErrorResponse> {
  return { code, details };
}

/**
 * envoy.service.auth.v3.Authorization/Check: converts, decides, converts back. A denial is a
 * successful RPC carrying a denied_response; the RPC itself fails only when no decision was made
 * (UNAVAILABLE without credential data, INTERNAL on a bug), so a failure can never read as an allow.
 */
export function createAuthorizationService(deps: AuthorizationServiceDeps): AuthorizationImplementation {
  const { logger } = deps;

  // An observer is someone else's code: it must neither fail nor delay-then-fail the check.
  function notify<E>(observer: ((event: E) => void) | undefined, event: E, requestId: string | undefined): void {
    if (observer === undefined) return;
    try {
      observer(event);
    } catch (error) {
      logger.error({ err: error, requestId }, 'a check observer failed; the check itself was answered');
    }
  }

  return {
    Check(call, callback) {
      const started = process.hrtime.bigint();
      let requestId: string | undefined;
      let decided: DecisionEvent | undefined;
      let failure: CheckFailureEvent['reason'] | undefined;
      let response: CheckResponseMessage | undefined;
      try {
        const view = viewCheckRequest(call.request, deps);
        requestId = view.requestId;
        const decision = deps.authorize(view.input);
        if (decision === undefined) {
          failure = 'unavailable';
        } else {
          response = toCheckResponse(decision);
          decided = { requestId, request: view.request, input: view.input, decision, durationSeconds: secondsSince(started) };
        }
      } catch (error) {
        failure = 'internal';
        logger.error({ err: error, requestId }, 'check failed with an unexpected error; answered INTERNAL');
      }

      if (response !== undefined) {
        callback(null, response);
      } else if (failure === 'unavailable') {
        // Logged at debug: while data is missing every check lands here; the store logs why once.
        logger.debug({ requestId }, 'check answered UNAVAILABLE: no credential data loaded, or too stale');
        callback(rpcError(GrpcStatus.UNAVAILABLE, 'no credential data loaded, or it is too stale to trust; see /readyz'));
      } else {
        callback(rpcError(GrpcStatus.INTERNAL, 'the authorization service failed to decide'));
      }

      if (decided !== undefined) notify(deps.onDecision, decided, requestId);
      else notify(deps.onFailure, { requestId, reason: failure ?? 'internal', durationSeconds: secondsSince(started) }, requestId);
    },
  };
}
