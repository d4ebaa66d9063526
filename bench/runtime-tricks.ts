import { denialMessage } from '../src/decision/error-catalogue.js';
import type { Allowed, Decision, Denial } from '../src/decision/types.js';
import { AllowedResponses } from '../src/envoy/allowed-responses.js';
import { checkRequestReader } from '../src/envoy/check-request-reader.js';
import { checkPolicies } from '../src/envoy/check-policies.js';
import { deniedResponseKey, toCheckResponse } from '../src/envoy/check-response.js';
import { EncodedResponses } from '../src/envoy/encoded-responses.js';
import { AUTHORIZATION_SERVICE, encodeCheckResponse } from '../src/envoy/proto.js';
import { namesReadBy, viewCheckRequest, type RequestViewOptions } from '../src/envoy/request-view.js';
import { loadConfig } from '../src/config.js';
import { encodeCheckRequest, partnerBody, tokenRequestBody } from './check-requests.js';

/**
 * `node dist/bench/runtime-tricks.js [rounds]`: each runtime trick `serve` keeps against the plain way the
 * libraries offer, in one process, alternating round by round so that both ways see the same machine, counted
 * in CPU time (a round that waits for a core on a shared machine costs none). Prints the median µs of CPU per
 * call of each way and what the trick saves (docs/performance.md, "Runtime tricks").
 */
const ROUNDS = Number(process.argv[2] ?? 40);
const CALLS = 20_000;
/** Calls before measuring: V8 has optimised both ways by then. */
const WARM_UP_CALLS = 50_000;

interface Comparison {
  readonly trick: string;
  readonly plain: string;
  /** Each returns a number that depends on what it made, so that nothing is optimised away. */
  readonly ways: readonly [(index: number) => number, (index: number) => number];
}

const viewOptions: RequestViewOptions = { clientIpSource: { kind: 'peer' }, maxBodyBytes: 64 * 1024 };
const readRequest = checkRequestReader(namesReadBy(viewOptions.clientIpSource));
const decodeAll = AUTHORIZATION_SERVICE.Check.requestDeserialize;
const key = '5b0c1a2e-3f4d-4e5f-8a6b-7c8d9e0f1a2b';
const requests = [
  encodeCheckRequest({ authorization: `4242:${key}`, body: partnerBody('4242', key) }),
  encodeCheckRequest({ authorization: `Bearer ${'e'.repeat(40)}.${'p'.repeat(300)}.${'s'.repeat(342)}`, body: tokenRequestBody() }),
];
const authorizationLength = (bytes: Buffer, decode: (bytes: Buffer) => ReturnType<typeof decodeAll>): number =>
  viewCheckRequest(decode(bytes), viewOptions).input.authorization?.length ?? 0;

const policy = checkPolicies(loadConfig({})).allowedResponse;
const allows: readonly Allowed[] = [
  { outcome: 'allow', method: 'api_key', siteId: '4242', keyId: '17' },
  { outcome: 'allow', method: 'token', siteId: '4242', clientId: 'partner-1001' },
];
const allowedResponses = new AllowedResponses(policy, encodeCheckResponse);
const wrongKeyDenial: Denial = { errorId: 102, siteId: '4242', maskedKey: '*****e0f1a' };
const wrongKey: Decision = { outcome: 'deny', denial: wrongKeyDenial };
const deniedResponses = new EncodedResponses(10);
const encodeDenial = (): Buffer => encodeCheckResponse(toCheckResponse(wrongKey));

const COMPARISONS: readonly Comparison[] = [
  {
    trick: "the CheckRequest reader (serve's), bytes to the request view",
    plain: "proto-loader's full decode, bytes to the request view",
    ways: [(i) => authorizationLength(requests[i & 1]!, readRequest), (i) => authorizationLength(requests[i & 1]!, decodeAll)],
  },
  {
    trick: 'an allowed response kept encoded (a key and a token in turn)',
    plain: 'the same response built and encoded for each check',
    ways: [(i) => allowedResponses.response(allows[i & 1]!).bytes.length, (i) => encodeCheckResponse(toCheckResponse(allows[i & 1]!, policy)).length],
  },
  {
    trick: 'a denied response (102) kept encoded, its key included',
    plain: 'the same response built and encoded for each check',
    ways: [() => deniedResponses.response(deniedResponseKey(wrongKeyDenial, denialMessage(wrongKeyDenial)), encodeDenial).bytes.length, () => encodeDenial().length],
  },
];

function cpuMicrosPerCall(way: (index: number) => number, calls: number): number {
  let made = 0;
  const started = process.cpuUsage();
  for (let i = 0; i < calls; i++) made += way(i);
  const { user, system } = process.cpuUsage(started);
  if (made === 0) throw new Error('a way made nothing: the comparison measures nothing');
  return (user + system) / calls;
}

const median = (values: readonly number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

console.log(`node ${process.version}, ${ROUNDS} alternating rounds of ${CALLS.toLocaleString('en')} calls each way, medians in µs of CPU per call:`);
for (const { trick, plain, ways } of COMPARISONS) {
  for (const way of ways) cpuMicrosPerCall(way, WARM_UP_CALLS);
  const figures: [number[], number[]] = [[], []];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [0, 1] as const : [1, 0] as const;
    for (const which of order) figures[which].push(cpuMicrosPerCall(ways[which], CALLS));
  }
  const [kept, plainWay] = figures.map(median) as [number, number];
  console.log(`  ${trick}: ${kept.toFixed(2)} µs`);
  console.log(`    ${plain}: ${plainWay.toFixed(2)} µs; the trick saves ${(plainWay - kept).toFixed(2)} µs`);
}
