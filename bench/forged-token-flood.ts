import * as grpc from '@grpc/grpc-js';
import { randomBytes } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { decodeCheckResponse, encodeCheckRequest, tokenRequestBody } from './check-requests.js';

/**
 * The thread of forgedTokenFlood (abuse-tokens.ts): `perSecond` checks a second on one HTTP/2
 * connection to serve's Check port, from `sourceAddress`, each with a Bearer token shaped like the
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
  /** By answer: the CheckResponse's status code, or rpc-<gRPC status>. */
  readonly outcomes: Record<string, number>;
  /** Checks not sent when due because MAX_IN_FLIGHT were unanswered. */
  readonly skipped: number;
}

const MAX_IN_FLIGHT = 4_000;
/** Messages encoded before the flood: encoding one with Envoy's protos would cost the flood its rate. */
const POOL = 8_192;
const asBytes = (bytes: Buffer): Buffer => bytes;
const data = workerData as FloodData;
const client = new grpc.Client(`127.0.0.1:${data.port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
const outcomes: Record<string, number> = {};
let sent = 0;
let skipped = 0;
let inFlight = 0;

function forged(n: number): string {
  if (n % 2 === 0) return data.rogueTokens[(n / 2) % data.rogueTokens.length] ?? '';
  const payload = Buffer.from(JSON.stringify({ ...data.claims, jti: `forged-${n}` })).toString('base64url');
  return `${data.header}.${payload}.${randomBytes(256).toString('base64url')}`;
}

const messages = Array.from({ length: POOL }, (_, n) => encodeCheckRequest({ authorization: `Bearer ${forged(n)}`, body: tokenRequestBody(), sourceAddress: data.sourceAddress }));

function send(n: number): void {
  inFlight += 1;
  client.makeUnaryRequest('/envoy.service.auth.v3.Authorization/Check', asBytes, asBytes, messages[n % POOL]!, { deadline: Date.now() + 10_000 }, (error, answer) => {
    inFlight -= 1;
    const outcome =
      error || answer === undefined
        ? `rpc-${grpc.status[error?.code ?? grpc.status.UNKNOWN]}`
        : String((decodeCheckResponse(answer) as { status?: { code?: number } }).status?.code ?? 0);
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  });
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
    client.close();
    return { sent, outcomes, skipped };
  };
}

client.waitForReady(Date.now() + 10_000, (error) => {
  if (error) throw error;
  parentPort?.once('message', () => {
    const stop = flood();
    parentPort?.once('message', () => void stop().then((report) => parentPort?.postMessage(report)));
  });
  parentPort?.postMessage('ready');
});
