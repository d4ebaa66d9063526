import { ServerInterceptingCall, status as GrpcStatus, type ServerInterceptingCallInterface, type ServerInterceptor } from '@grpc/grpc-js';
import { constants as http2Constants, type ServerHttp2Stream } from 'node:http2';

/*
 * Requests that have begun but not all arrived: a time-out for each, a budget for the bytes all of them
 * hold, and the reset of a stream whose call ended first. The gRPC server puts the interceptor first.
 */

/**
 * grpc-js keeps the HTTP/2 stream of a call private; the first interceptor is handed grpc-js's own call,
 * which holds it. undefined if a grpc-js version stops doing so (test/integration/connection-limits
 * then fails): calls are still answered, but their streams stay half-open until the client ends them.
 */
function http2StreamOf(call: ServerInterceptingCallInterface): ServerHttp2Stream | undefined {
  const stream = (call as { stream?: Partial<ServerHttp2Stream> }).stream;
  return typeof stream?.close === 'function' && typeof stream.respond === 'function' ? (stream as ServerHttp2Stream) : undefined;
}

interface OpenRequest {
  bytes: number;
  readonly end: () => void;
  /** Its neighbours among the open requests, in the order they began; `open` false once it left them. */
  older: OpenRequest | undefined;
  newer: OpenRequest | undefined;
  open: boolean;
}

/**
 * The bytes held by requests that have begun but not all arrived, over every connection. When a new
 * chunk takes the total over the budget, the oldest incomplete requests are ended until it fits again.
 *
 * The open requests are a list linked through the requests themselves, not a Set: a Set lives as long
 * as the server, so V8 keeps its table in the old generation, and deleting its last entry (as each check
 * that completes alone does) allocates a new table there, some 130 bytes a check that only a full
 * collection frees. Nor a Symbol per request as a key, for the same reason.
 */
export class IncompleteRequestBudget {
  private heldBytes = 0;
  private oldest: OpenRequest | undefined;
  private newest: OpenRequest | undefined;

  constructor(
    private readonly budgetBytes: number,
    private readonly onReset: () => void,
  ) {}

  get held(): number {
    return this.heldBytes;
  }

  /** A request that began; `end` answers it and resets its stream. */
  begin(end: () => void): { received(bytes: number): void; complete(): void } {
    const request: OpenRequest = { bytes: 0, end, older: this.newest, newer: undefined, open: true };
    if (this.newest === undefined) this.oldest = request;
    else this.newest.newer = request;
    this.newest = request;
    return {
      received: (bytes) => {
        if (!request.open) return;
        request.bytes += bytes;
        this.heldBytes += bytes;
        // Ending one may complete others (their streams closed): take the oldest afresh each time.
        while (this.heldBytes > this.budgetBytes && this.oldest !== undefined) {
          const oldest = this.oldest;
          this.close(oldest);
          this.onReset();
          oldest.end();
        }
      },
      complete: () => {
        if (request.open) this.close(request);
      },
    };
  }

  private close(request: OpenRequest): void {
    request.open = false;
    this.heldBytes -= request.bytes;
    if (request.older === undefined) this.oldest = request.newer;
    else request.older.newer = request.newer;
    if (request.newer === undefined) this.newest = request.older;
    else request.newer.older = request.older;
    request.older = undefined;
    request.newer = undefined;
  }
}

/**
 * Ends a call whose request has not all arrived within timeoutMs with DEADLINE_EXCEEDED. And whenever a
 * call ends before its request did (this time-out, grpc-timeout, a message over the size limit), resets
 * its stream: grpc-js sends the status but leaves the stream half-open until the client ends it, so a
 * client that never does would keep it, and its place under max_concurrent_streams, for the life of the
 * connection. RFC 9113 §8.1 lets a server that sent a complete response reset with NO_ERROR.
 */
export function endIncompleteRequests(timeoutMs: number, budget: IncompleteRequestBudget): ServerInterceptor {
  return (_method, call) => {
    const stream = http2StreamOf(call);
    let requestReceived = false;
    let timer: NodeJS.Timeout | undefined;
    let held: ReturnType<IncompleteRequestBudget['begin']> | undefined;
    const intercepted: ServerInterceptingCall = new ServerInterceptingCall(call, {
      start: (next) => {
        timer = setTimeout(() => {
          intercepted.sendStatus({ code: GrpcStatus.DEADLINE_EXCEEDED, details: `request not received within ${timeoutMs} ms` });
        }, timeoutMs);
        if (stream !== undefined) {
          held = budget.begin(() =>
            intercepted.sendStatus({ code: GrpcStatus.RESOURCE_EXHAUSTED, details: 'too many bytes of incomplete requests held; this was the oldest' }),
          );
          // grpc-js reads the stream through its own 'data' listener and pauses it itself; this one only counts.
          stream.on('data', (chunk: Buffer) => held?.received(chunk.length));
        }
        next({
          onReceiveHalfClose: (nextHalfClose) => {
            requestReceived = true;
            held?.complete();
            clearTimeout(timer);
            nextHalfClose();
          },
          // grpc-js calls onCancel when a call ends, whether by its status or by the client.
          onCancel: () => {
            held?.complete();
            clearTimeout(timer);
            if (requestReceived || stream === undefined || stream.closed) return;
            // Only after the status has gone out: a reset that overtakes the trailers (as it does
            // on Node 26) would turn the status into INTERNAL for the client.
            const reset = () => {
              if (!stream.closed) stream.close(http2Constants.NGHTTP2_NO_ERROR);
            };
            if (stream.writableFinished) setImmediate(reset);
            else stream.once('finish', () => setImmediate(reset));
          },
        });
      },
    });
    return intercepted;
  };
}

/** No budget: what a server without one (a benchmark's no-op) gets. */
export function unlimitedBudget(): IncompleteRequestBudget {
  return new IncompleteRequestBudget(Number.POSITIVE_INFINITY, () => undefined);
}
