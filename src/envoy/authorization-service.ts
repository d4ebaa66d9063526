import { status as GrpcStatus, type handleUnaryCall, type sendUnaryData, type ServerErrorResponse } from '@grpc/grpc-js';
import { denialMessage } from '../decision/error-catalogue.js';
import type { CheckInput, Decided, UndecidedReason } from '../decision/types.js';
import { checkEvent, type CheckEvent, type UndecidedCheckEvent } from '../observe/check-event.js';
import type { Logger } from '../observe/logger.js';
import { AllowedResponses } from './allowed-responses.js';
import { deniedResponseKey, PLAIN_ALLOWED_RESPONSE, toCheckResponse, toShadowResponse, type AllowedResponsePolicy } from './check-response.js';
import { EncodedResponses } from './encoded-responses.js';
import type { CheckRequestMessage } from './messages.js';
import { encodeCheckResponse, type CheckResponseToSend } from './proto.js';
import { viewCheckRequest, type CheckRequestView, type RequestViewOptions } from './request-view.js';

export interface AuthorizationServiceDeps extends RequestViewOptions {
  /** Undefined without credential data; a Promise only where it waits, as for a new token's verification. */
  readonly authorize: (input: CheckInput) => Decided | Promise<Decided>;
  /** A function where it may change (the sunset policy lives in the database), read after each decision. */
  readonly allowedResponse?: AllowedResponsePolicy | (() => AllowedResponsePolicy);
  /** Observers get the key-free event, never the request as received. */
  readonly onDecision?: (event: CheckEvent) => void;
  readonly onFailure?: (event: UndecidedCheckEvent) => void;
  readonly logger: Logger;
  readonly shadowMode?: boolean;
}

export type AuthorizationImplementation = {
  readonly Check: handleUnaryCall<CheckRequestMessage, CheckResponseToSend>;
};

/** performance.now(), not hrtime.bigint(): no BigInt per check. */
function secondsSince(started: number): number {
  return (performance.now() - started) / 1000;
}

export const DENIED_RESPONSES_MAX = 10_000;

function rpcError(code: GrpcStatus, details: string): Partial<ServerErrorResponse> {
  return { code, details };
}

/** Envoy answers these with its retryable 503. */
const UNDECIDED_DETAILS: Readonly<Record<UndecidedReason, string>> = {
  'unknown-kid-pending': "the token names a signing key (kid) not looked up at the issuer yet; retry in a moment",
  'verification-budget': 'too many new tokens to verify from this address right now; retry in a moment',
};

const failedToDecide = (): Partial<ServerErrorResponse> => rpcError(GrpcStatus.INTERNAL, 'the authorization service failed to decide');

/** A denial is a successful RPC; the RPC fails only when no decision was made, so a failure never reads as an allow. */
export function createAuthorizationService(deps: AuthorizationServiceDeps): AuthorizationImplementation {
  const { logger } = deps;
  const allowedPolicy = deps.allowedResponse ?? PLAIN_ALLOWED_RESPONSE;
  const currentAllowedPolicy = typeof allowedPolicy === 'function' ? allowedPolicy : () => allowedPolicy;
  const allowedResponses = new AllowedResponses(currentAllowedPolicy(), encodeCheckResponse);
  // Anyone can be denied, so anyone can add entries: they are bounded, and a made-up one costs what encoding costs.
  const deniedResponses = new EncodedResponses(DENIED_RESPONSES_MAX);

  // An observer is someone else's code: it must neither fail nor delay-then-fail the check.
  function notify<E>(observer: ((event: E) => void) | undefined, event: E, requestId: string | undefined): void {
    if (observer === undefined) return;
    try {
      observer(event);
    } catch (error) {
      logger.error({ err: error, requestId }, 'a check observer failed; the check itself was answered');
    }
  }

  /** Made without side effects; the caller sends it and tells observers. */
  type Answer =
    | { readonly response: CheckResponseToSend; readonly event: CheckEvent }
    | { readonly failure: UndecidedCheckEvent['reason']; readonly requestId: string | undefined };

  function answer(request: CheckRequestMessage, started: number): Answer | Promise<Answer> {
    let requestId: string | undefined;
    try {
      const view = viewCheckRequest(request, deps);
      requestId = view.requestId;
      const decision = deps.authorize(view.input);
      if (decision instanceof Promise) return decision.then((decided) => answerSafely(() => respond(view, decided, started), requestId), (error: unknown) => failed(error, requestId));
      return respond(view, decision, started);
    } catch (error) {
      return failed(error, requestId);
    }
  }

  function answerSafely(make: () => Answer, requestId: string | undefined): Answer {
    try {
      return make();
    } catch (error) {
      return failed(error, requestId);
    }
  }

  function respond(view: CheckRequestView, decision: Decided, started: number): Answer {
    if (decision === undefined) return { failure: 'unavailable', requestId: view.requestId };
    if ('undecided' in decision) return { failure: decision.undecided, requestId: view.requestId };
    if (decision.outcome === 'allow') {
      return { response: allowedResponses.response(decision, currentAllowedPolicy()), event: checkEvent(view, decision, secondsSince(started)) };
    }
    // The decision stays what it is; only the answer and what observers are told change.
    if (deps.shadowMode === true) {
      return { response: toShadowResponse(decision.denial, currentAllowedPolicy()), event: checkEvent(view, decision, secondsSince(started), true) };
    }
    const message = denialMessage(decision.denial);
    const response = deniedResponses.response(deniedResponseKey(decision.denial, message), () => encodeCheckResponse(toCheckResponse(decision)));
    return { response, event: checkEvent(view, decision, secondsSince(started), false, message) };
  }

  function failed(error: unknown, requestId: string | undefined): Answer {
    logger.error({ err: error, requestId }, 'check failed with an unexpected error; answered INTERNAL');
    return { failure: 'internal', requestId };
  }

  /** A decided check's event is returned for observers; a failure's observers are told here. */
  function send(result: Answer, callback: sendUnaryData<CheckResponseToSend>, started: number): CheckEvent | undefined {
    if ('response' in result) {
      callback(null, result.response);
      return result.event;
    }
    const { failure, requestId } = result;
    if (failure === 'unavailable') {
      // Logged at debug: while data is missing every check lands here; the store logs why once.
      logger.debug({ requestId }, 'check answered UNAVAILABLE: no credential data loaded, or too stale');
      callback(rpcError(GrpcStatus.UNAVAILABLE, 'no credential data loaded, or it is too stale to trust; see /readyz'));
    } else if (failure === 'internal') {
      callback(failedToDecide());
    } else {
      callback(rpcError(GrpcStatus.UNAVAILABLE, UNDECIDED_DETAILS[failure]));
    }
    notify(deps.onFailure, { requestId, reason: failure, durationSeconds: secondsSince(started) }, requestId);
    return undefined;
  }

  const observe = (event: CheckEvent | undefined): void => {
    if (event !== undefined) notify(deps.onDecision, event, event.requestId);
  };

  /** Sends the answer, then tells observers; a send that throws is answered INTERNAL if the call still can be. */
  function deliver(result: Answer, callback: sendUnaryData<CheckResponseToSend>, started: number): void {
    let event: CheckEvent | undefined;
    try {
      event = send(result, callback, started);
    } catch (error) {
      logger.error({ err: error }, 'a check could not be answered; answering it INTERNAL');
      try {
        callback(failedToDecide());
      } catch {
        // The call is gone: there is nobody left to answer.
      }
      return;
    }
    observe(event);
  }

  function check(request: CheckRequestMessage, callback: sendUnaryData<CheckResponseToSend>, started: number): void {
    const result = answer(request, started);
    if (result instanceof Promise) void result.then((settled) => deliver(settled, callback, started));
    else deliver(result, callback, started);
  }

  return {
    Check(call, callback) {
      check(call.request, callback, performance.now());
    },
  };
}
