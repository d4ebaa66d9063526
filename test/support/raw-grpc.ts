import { connect, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { connect as tcpConnect, type Socket } from 'node:net';

/**
 * gRPC by hand over node's HTTP/2 client, for what no well-behaved gRPC client sends: bytes that are
 * no CheckRequest, length prefixes that lie, calls abandoned half-way.
 */
export const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';

/** A gRPC length-prefixed message (gRPC over HTTP/2, "Length-Prefixed-Message"); the prefix may lie. */
export function grpcFrame(message: Uint8Array, options: { compressed?: boolean; declaredLength?: number } = {}): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt8(options.compressed ? 1 : 0, 0);
  prefix.writeUInt32BE(options.declaredLength ?? message.length, 1);
  return Buffer.concat([prefix, message]);
}

export function h2session(target: string): ClientHttp2Session {
  return h2sessionWithSocket(target).session;
}

/** A session with its TCP socket at hand, to drop the connection without a word (no GOAWAY, no FIN first). */
export function h2sessionWithSocket(target: string): { session: ClientHttp2Session; socket: Socket } {
  const [host = '', port = ''] = target.split(':');
  const socket = tcpConnect(Number(port), host);
  socket.on('error', () => undefined);
  const session = connect(`http://${target}`, { peerMaxConcurrentStreams: 1_000, createConnection: () => socket });
  session.on('error', () => undefined);
  return { session, socket };
}

export function openCheckStream(session: ClientHttp2Session, headers: Record<string, string> = {}): ClientHttp2Stream {
  const stream = session.request({ ':method': 'POST', ':path': CHECK_PATH, 'content-type': 'application/grpc', te: 'trailers', ...headers }, { endStream: false });
  stream.on('error', () => undefined);
  return stream;
}

/** How a hand-made call ended: the grpc-status the server sent (if any), the stream's RST_STREAM code, what it sent. */
export interface RawCallEnd {
  readonly grpcStatus: number | undefined;
  readonly rstCode: number | undefined;
  /** The response's DATA, length prefixes included. */
  readonly data: Buffer;
}

export function callEnd(stream: ClientHttp2Stream): Promise<RawCallEnd> {
  let grpcStatus: number | undefined;
  const readStatus = (headers: Record<string, unknown>) => {
    if (headers['grpc-status'] !== undefined) grpcStatus = Number(headers['grpc-status']);
  };
  stream.on('response', readStatus);
  stream.on('trailers', readStatus);
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  return new Promise((resolveEnd) => stream.on('close', () => resolveEnd({ grpcStatus, rstCode: stream.rstCode, data: Buffer.concat(chunks) })));
}

/** The message of a response that holds exactly one. */
export function onlyMessage(data: Buffer): Buffer {
  const length = data.length >= 5 ? data.readUInt32BE(1) : -1;
  if (length !== data.length - 5) throw new Error(`expected one gRPC message, got ${data.length} bytes of DATA`);
  return data.subarray(5);
}

/** A whole call: `body` then END_STREAM, and how the server ended it. */
export function rawCall(session: ClientHttp2Session, body: Uint8Array, headers: Record<string, string> = {}): Promise<RawCallEnd> {
  const stream = openCheckStream(session, headers);
  const ended = callEnd(stream);
  stream.end(body);
  return ended;
}

/** Resolves once the server has acknowledged a PING: it has read every frame sent before it. */
export async function serverHasRead(session: ClientHttp2Session): Promise<void> {
  if (session.connecting) await new Promise((connected) => session.once('connect', connected));
  await new Promise<void>((acknowledged, reject) => session.ping((error) => (error ? reject(error) : acknowledged())));
}
