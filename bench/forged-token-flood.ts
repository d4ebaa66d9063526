import { randomBytes } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { callEnd, grpcFrame, h2session, onlyMessage, openCheckStream } from '../test/support/raw-grpc.js';
import { decodeCheckResponse, encodeCheckRequest, tokenRequestBody } from './check-requests.js';

/**
 * The thread of the forged-token row (abuse-tokens.ts): `perSecond` checks a second on one HTTP/2
 * connection to serve's Check port, by hand (raw-grpc.ts: an attacker needs no gRPC library), from `sourceAddress`, each with a Bearer token shaped like the
 * issuer's (its kid, iss, aud, client_id, a future exp): every other one signed by a key the issuer
 * does not publish (a pool cycled through), the rest new ones under 256 random bytes for a signature.
 * The CheckRequests are encoded first (POOL of them, cycled through: a refused token is not kept, so
 * each sending costs serve what a new one would), then 'ready' is posted; the first message starts the
 * flood, in catch-up steps every 10 ms whatever the answers, at most MAX_IN_FLIGHT unanswered; the
 * second stops it, waits for those in flight (5 s at most) and posts what was sent and answered.
 */
export interface FloodData {
  readonly port: number;
  readonly perSecond: number;
  readonly sourceAddress: string;
  /** The base64url JWS header every random-signature token carries. */
  readonly header: string;
  /** The claims of every random-signature token but its jti. */
  readonly claims: Record<string, unknown>;
  /** Tokens signed by a key the issuer does not publish, under the kid it does publish. */
  readonly rogueTokens: readonly string[];
}

export interface FloodReport {
  readonly sent: number;
  /** By answer: the CheckResponse's status code, rpc-<gRPC status code>, or unanswered when the flood stopped. */
  readonly outcomes: Record<string, number>;
  /** Checks not sent when due because MAX_IN_FLIGHT were unanswered. */
  readonly skipped: number;
}

const MAX_IN_FLIGHT = 4_000;
/** Messages encoded before the flood: encoding one with Envoy's protos would cost the flood its rate. */
const POOL = 8_192;
const data = workerData as FloodData;
const session = h2session(`127.0.0.1:${data.port}`);
const outcomes: Record<string, number> = {};
let sent = 0;
let skipped = 0;
let inFlight = 0;

function forged(n: number): string {
  if (n % 2 === 0) return data.rogueTokens[(n / 2) % data.rogueTokens.length] ?? '';
  const payload = Buffer.from(JSON.stringify({ ...data.claims, jti: `forged-${n}` })).toString('base64url');
  return `${data.header}.${payload}.${randomBytes(256).toString('base64url')}`;
}

const frames = Array.from({ length: POOL }, (_, n) => grpcFrame(encodeCheckRequest({ authorization: `Bearer ${forged(n)}`, body: tokenRequestBody(), sourceAddress: data.sourceAddress })));

function outcomeOf(grpcStatus: number | undefined, response: Buffer): string {
  if (grpcStatus !== 0) return `rpc-${grpcStatus ?? 'none'}`;
  return String((decodeCheckResponse(onlyMessage(response)) as { status?: { code?: number } }).status?.code ?? 0);
}

function send(n: number): void {
  inFlight += 1;
  const stream = openCheckStream(session);
  void callEnd(stream).then(({ grpcStatus, data: response }) => {
    inFlight -= 1;
    const outcome = outcomeOf(grpcStatus, response);
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  });
  stream.end(frames[n % POOL]);
}

function flood(): () => Promise<FloodReport> {
  const startedMs = performance.now();
  let due = 0;
  const timer = setInterval(() => {
    const until = Math.floor(((performance.now() - startedMs) / 1000) * data.perSecond);
    for (; due < until; due++) {
      if (inFlight >= MAX_IN_FLIGHT) skipped += 1;
      else send(sent++);
    }
  }, 10);
  return async () => {
    clearInterval(timer);
    for (const deadline = performance.now() + 5_000; inFlight > 0 && performance.now() < deadline; ) await new Promise((resolveWait) => setTimeout(resolveWait, 20));
    const report: FloodReport = { sent, outcomes: { ...outcomes, ...(inFlight > 0 && { unanswered: inFlight }) }, skipped };
    session.destroy();
    return report;
  };
}

session.once('connect', () => {
  parentPort?.once('message', () => {
    const stop = flood();
    parentPort?.once('message', () => void stop().then((report) => parentPort?.postMessage(report)));
  });
  parentPort?.postMessage('ready');
});
