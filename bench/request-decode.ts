import { checkRequestReader } from '../src/envoy/check-request-reader.js';
import { AUTHORIZATION_SERVICE } from '../src/envoy/proto.js';
import { namesReadBy, viewCheckRequest, type RequestViewOptions } from '../src/envoy/request-view.js';
import { encodeCheckRequest, partnerBody, tokenRequestBody } from './check-requests.js';

/**
 * `node dist/bench/request-decode.js [rounds]`: a CheckRequest's bytes to the request view, two ways, in one
 * process, alternating round by round so that both see the same machine: the hand-written reader that keeps
 * only what the view reads (check-request-reader.ts), and proto-loader's full decode, which grpc-js would
 * run with our proto/. Prints the median µs of CPU per request of each and their difference.
 */
const viewOptions: RequestViewOptions = { clientIpSource: { kind: 'peer' }, maxBodyBytes: 64 * 1024 };
const readRequest = checkRequestReader(namesReadBy(viewOptions.clientIpSource));
const decode = AUTHORIZATION_SERVICE.Check.requestDeserialize;

const key = '5b0c1a2e-3f4d-4e5f-8a6b-7c8d9e0f1a2b';
const REQUESTS = [
  encodeCheckRequest({ authorization: `4242:${key}`, body: partnerBody('4242', key) }),
  encodeCheckRequest({ authorization: `Bearer ${'e'.repeat(40)}.${'p'.repeat(300)}.${'s'.repeat(342)}`, body: tokenRequestBody() }),
];

const WAYS = {
  reader: (bytes: Buffer) => viewCheckRequest(readRequest(bytes), viewOptions),
  decode: (bytes: Buffer) => viewCheckRequest(decode(bytes), viewOptions),
} as const;
type Way = keyof typeof WAYS;

let sink = 0;
function run(way: Way, calls: number): void {
  const view = WAYS[way];
  for (let i = 0; i < calls; i++) sink += view(REQUESTS[i & 1]!).input.authorization?.length ?? 0;
}

/** CPU time, not wall time: on a shared machine a round that waits for a core costs no CPU. */
function microsPerCall(way: Way, calls: number): number {
  const started = process.cpuUsage();
  run(way, calls);
  const { user, system } = process.cpuUsage(started);
  return (user + system) / calls;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const rounds = Number(process.argv[2] ?? 40);
const CALLS = 20_000;
/** Calls before measuring: V8 has optimised both ways by then. */
const WARM_UP_CALLS = 50_000;
run('reader', WARM_UP_CALLS);
run('decode', WARM_UP_CALLS);
const figures: Record<Way, number[]> = { reader: [], decode: [] };
for (let round = 0; round < rounds; round++) {
  const order: Way[] = round % 2 === 0 ? ['reader', 'decode'] : ['decode', 'reader'];
  for (const way of order) figures[way].push(microsPerCall(way, CALLS));
}
if (sink === 0) throw new Error('no request was read with its Authorization header');
const reader = median(figures.reader);
const decoded = median(figures.decode);
console.log(`node ${process.version}, ${rounds} alternating rounds of ${CALLS.toLocaleString('en')} requests (a key's and a token's in turn), from bytes to the request view, medians in µs of CPU:`);
console.log(`  the reader (serve's)        ${reader.toFixed(2)} µs per request`);
console.log(`  proto-loader's full decode  ${decoded.toFixed(2)} µs per request`);
console.log(`  the reader saves            ${(decoded - reader).toFixed(2)} µs per request`);
