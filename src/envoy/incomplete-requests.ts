import { ServerInterceptingCall, status as GrpcStatus, type ServerInterceptingCallInterface, type ServerInterceptor } from '@grpc/grpc-js';
import { constants as http2Constants, type ServerHttp2Stream } from 'node:http2';

// grpc-js keeps a call's HTTP/2 stream private, but hands the first interceptor its own call, which holds it
// (test/integration/connection-limits fails if a version stops doing so).
function http2StreamOf(call: ServerInterceptingCallInterface): ServerHttp2Stream | undefined {
  const stream = (call as { stream?: Partial<ServerHttp2Stream> }).stream;
  return typeof stream?.close === 'function' && typeof stream.respond === 'function' ? (stream as ServerHttp2Stream) : undefined;
}

interface OpenRequest {
  bytes: number;
  readonly end: () => void;
  older: OpenRequest | undefined;
  newer: OpenRequest | undefined;
  open: boolean;
}

/** A linked list, not a Set: emptying a long-lived Set allocates an old-generation table, ~130 bytes a check. */
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
 * DEADLINE_EXCEEDED past timeoutMs; a call that ends before its request did has its stream reset (NO_ERROR,
 * RFC 9113 §8.1): grpc-js leaves it half-open, holding a max_concurrent_streams place for the connection's life.
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

export function unlimitedBudget(): IncompleteRequestBudget {
  return new IncompleteRequestBudget(Number.POSITIVE_INFINITY, () => undefined);
}
