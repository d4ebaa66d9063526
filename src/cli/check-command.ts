import { Client, credentials, Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { CheckRequestMessage } from '../envoy/messages.js';
import { AUTHORIZATION_SERVICE } from '../envoy/proto.js';
import { UsageError } from './arguments.js';
import { answerOf, exitStatusOf, grpcCodeName, noVerdict, verdictText, type ReceivedCheckResponse } from './check-answer.js';
import { EXIT_NO_VERDICT, option, type CommandContext, type CommandLine } from './command.js';
import type { CommandOutput } from './output.js';
import { requestFromOptions } from './request-options.js';

const DEFAULT_TIMEOUT_MS = 5_000;

function timeoutOption(text: string | undefined): number {
  if (text === undefined) return DEFAULT_TIMEOUT_MS;
  const timeoutMs = Number(text);
  if (!/^\d+$/.test(text) || timeoutMs <= 0 || timeoutMs > 3_600_000) {
    throw new UsageError(`--timeout-ms "${text}" is not a whole number of milliseconds from 1 to 3600000; try --timeout-ms 5000`);
  }
  return timeoutMs;
}

function authorizationClient(target: string): Client {
  try {
    return new Client(target, credentials.createInsecure());
  } catch (error) {
    throw new UsageError(`--target "${target}" is not a gRPC target (${(error as Error).message}); try --target localhost:9001`);
  }
}

function sendCheck(target: string, request: CheckRequestMessage, timeoutMs: number): Promise<ReceivedCheckResponse> {
  const method = AUTHORIZATION_SERVICE.Check;
  const client = authorizationClient(target);
  return new Promise<ReceivedCheckResponse>((resolveResponse, reject) => {
    client.makeUnaryRequest(
      method.path,
      method.requestSerialize,
      (bytes: Buffer) => method.responseDeserialize(bytes) as ReceivedCheckResponse,
      request,
      new Metadata(),
      { deadline: Date.now() + timeoutMs },
      (error: ServiceError | null, response?: ReceivedCheckResponse) => (error || !response ? reject(error) : resolveResponse(response)),
    );
  }).finally(() => client.close());
}

/** A failed connection in one line instead of grpc-js's resolver text; undefined when the service was reached. */
function unreachable(details: string, target: string): string | undefined {
  const start = `start it with \`make run\` or \`sitekey-authz serve\`, or name it with --target HOST:PORT (a changed GRPC_PORT must be exported in this terminal too)`;
  if (/ECONNREFUSED/.test(details)) return `no service is listening at ${target}: ${start}`;
  if (/Name resolution failed|ENOTFOUND|EAI_AGAIN/.test(details)) return `the host of ${target} cannot be resolved; check --target HOST:PORT`;
  if (/No connection established|ECONNRESET|EHOSTUNREACH|ENETUNREACH/.test(details)) return `cannot connect to ${target}: ${start}`;
  return undefined;
}

export async function runCheck({ config, readStdin }: CommandContext, line: CommandLine): Promise<CommandOutput> {
  const target = option(line, 'target') ?? `localhost:${config.grpcPort}`;
  const timeoutMs = timeoutOption(option(line, 'timeout-ms'));
  const { request, notes } = await requestFromOptions(line, readStdin);
  try {
    const response = await sendCheck(target, request, timeoutMs);
    const answer = answerOf(response);
    return { text: verdictText(response), json: answer, warnings: notes, exitCode: exitStatusOf(answer) };
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const rpc = error as Partial<ServiceError> | null;
    const code = typeof rpc?.code === 'number' ? rpc.code : GrpcStatus.UNKNOWN;
    const details = rpc?.details ?? rpc?.message ?? String(error);
    const notReached = code === GrpcStatus.UNAVAILABLE ? unreachable(details, target) : undefined;
    return {
      text: notReached === undefined ? `NO VERDICT  (gRPC status ${grpcCodeName(code)}: ${details}; target ${target})` : `NO VERDICT  ${notReached}`,
      json: noVerdict(code),
      warnings: notes,
      exitCode: EXIT_NO_VERDICT,
    };
  }
}
