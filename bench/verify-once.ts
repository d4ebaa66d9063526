import { Client, credentials } from '@grpc/grpc-js';
import { AUTHORIZATION_SERVICE_NAME } from '../src/envoy/proto.js';
import { verdict, type UpstreamCheckResponse } from '../test/support/envoy-client.js';
import { decodeCheckResponse, type BenchRequest } from './check-requests.js';

/** What a server answered to one request's exact bytes. */
export interface Answer {
  readonly verdict: 'allow' | number;
  /** The CheckResponse message as it came off the wire. */
  readonly bytes: Buffer;
}

/**
 * h2load only sees HTTP 200 (a gRPC status rides in the trailers, and a denial is an OK RPC), so each
 * request file's message is sent once with a real gRPC client first: the same bytes, its verdict read
 * from the decoded CheckResponse.
 */
export async function answerTo(port: number, request: BenchRequest): Promise<Answer> {
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
  try {
    const bytes = await new Promise<Buffer>((resolveCall, reject) => {
      client.makeUnaryRequest(
        `/${AUTHORIZATION_SERVICE_NAME}/Check`,
        (message: Buffer) => message,
        (message: Buffer) => message,
        request.message,
        { deadline: Date.now() + 5_000 },
        (error, response) => (error || response === undefined ? reject(error ?? new Error('no response')) : resolveCall(response)),
      );
    });
    return { verdict: verdict(decodeCheckResponse(bytes) as UpstreamCheckResponse), bytes };
  } finally {
    client.close();
  }
}

/** Throws unless the server gives `request` the verdict it was written for. */
export async function assertVerdict(serverName: string, port: number, request: BenchRequest): Promise<Answer> {
  const answer = await answerTo(port, request);
  if (answer.verdict !== request.expected) {
    throw new Error(`${serverName} answered ${answer.verdict} to the ${request.name} request, which must get ${request.expected}`);
  }
  return answer;
}
