import * as grpc from '@grpc/grpc-js';
import { decodeCheckResponse } from './check-requests.js';

/**
 * The child process of startPacedChecks: `node paced-check-caller.js <port> <interval ms> <CheckRequest
 * hex>` sends that Check every interval on one HTTP/2 connection, whatever the answers, until its
 * standard input ends; then waits for those in flight and exits. One line per check, when answered:
 * `<due, wall-clock ms> <ms from due to answer> <outcome>`, the outcome being the CheckResponse's
 * status code (0: allowed) or `rpc-<gRPC status>` for a call that failed.
 */
const [port = '', intervalText = '50', hex = ''] = process.argv.slice(2);
const intervalMs = Number(intervalText);
const message = Buffer.from(hex, 'hex');
const asBytes = (bytes: Buffer): Buffer => bytes;
const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });

let stopping = false;
let inFlight = 0;
let startMs = 0;
let next = 0;

function send(dueMs: number): void {
  inFlight += 1;
  client.makeUnaryRequest('/envoy.service.auth.v3.Authorization/Check', asBytes, asBytes, message, { deadline: Date.now() + 10_000 }, (error, answer) => {
    const latencyMs = performance.now() - dueMs;
    let outcome: string;
    if (error || answer === undefined) outcome = `rpc-${grpc.status[error?.code ?? grpc.status.UNKNOWN]}`;
    else outcome = String((decodeCheckResponse(answer) as { status?: { code?: number } }).status?.code ?? 0);
    process.stdout.write(`${(performance.timeOrigin + dueMs).toFixed(1)} ${latencyMs.toFixed(2)} ${outcome}\n`);
    inFlight -= 1;
    if (stopping && inFlight === 0) client.close();
  });
}

function tick(): void {
  if (stopping) return;
  // Every check that is due goes out now, however late: the schedule never waits for answers.
  while (startMs + next * intervalMs <= performance.now()) send(startMs + next++ * intervalMs);
  setTimeout(tick, Math.max(0, startMs + next * intervalMs - performance.now()));
}

client.waitForReady(Date.now() + 10_000, (error) => {
  if (error) {
    console.error(`paced checks: no connection to 127.0.0.1:${port}: ${error.message}`);
    process.exit(1);
  }
  startMs = performance.now();
  tick();
});
process.stdin.resume();
process.stdin.on('end', () => {
  stopping = true;
  if (inFlight === 0) client.close();
});
