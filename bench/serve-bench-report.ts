import { LARGE_BODY_BYTES } from './bench-sites.js';
import { median, type LoadRun, type Rounds, type ServeBenchResults } from './serve-bench.js';

/** The performance targets, for the benchmark and never for a unit test. */
export const TARGETS = Object.freeze({
  /** One process's saturation throughput as a share of the no-op's. */
  minShareOfNoop: 0.9,
  /** p99 at half of serve's saturation. */
  maxP99Micros: 1_000,
  /** Fewer statements than one per this many checks counts as zero per check: what is left is periodic. */
  checksPerPeriodicStatement: 1_000,
});

const integer = (value: number) => Math.round(value).toLocaleString('en');
const micros = (value: number) => value.toFixed(1);
const millis = (valueMicros: number) => (valueMicros / 1000).toFixed(3);
const percent = (value: number) => `${(value * 100).toFixed(0)} %`;
const yes = (met: boolean) => (met ? 'yes' : '**no**');

function share(serve: LoadRun, noop: LoadRun): number {
  return serve.requestsPerSecond / noop.requestsPerSecond;
}

function statementsPerCheck(runs: readonly LoadRun[]): { statements: number; checks: number } {
  return {
    statements: runs.reduce((total, run) => total + (run.statements?.total ?? 0), 0),
    checks: runs.reduce((total, run) => total + run.checks, 0),
  };
}

function statementTable(runs: readonly LoadRun[]): string[] {
  const byText = new Map<string, number>();
  for (const run of runs) {
    for (const { query, calls } of run.statements?.byText ?? []) {
      const text = query.replace(/\s+/g, ' ').trim();
      byText.set(text, (byText.get(text) ?? 0) + calls);
    }
  }
  if (byText.size === 0) return ['None.'];
  return [
    '| calls | statement |',
    '|---|---|',
    ...[...byText]
      .sort((a, b) => b[1] - a[1])
      .map(([text, calls]) => `| ${calls} | \`${(text.length > 110 ? `${text.slice(0, 110)}…` : text).replace(/\|/g, '\\|')}\` |`),
  ];
}

function costRow(label: string, run: LoadRun, noop: LoadRun): string {
  return `| ${label} | ${integer(run.requestsPerSecond)} | ${integer(noop.requestsPerSecond)} | ${percent(share(run, noop))} | ` +
    `${micros(run.cpuMicrosPerCheck)} / ${micros(noop.cpuMicrosPerCheck)} | ${integer(run.allocatedBytesPerCheck)} / ${integer(noop.allocatedBytesPerCheck)} | ` +
    `${micros(run.gcMicrosPerCheck)} / ${micros(noop.gcMicrosPerCheck)} |`;
}

/** How far apart the identical no-op processes of a row ran, each by the median of its rounds. */
export function processSpread(rounds: Rounds): string {
  const pairs = [...new Set(rounds.map((r) => r.pair))];
  if (pairs.length < 2) return '';
  const medians = pairs.map((pair) => median(rounds.filter((r) => r.pair === pair).map((r) => r.noop.requestsPerSecond)));
  return `In this run the ${pairs.length} no-op processes ran at ${medians.map(integer).join(', ')} req/s (each the median of its rounds).`;
}

/** Round by round and pair by pair, serve against its floor, then the medians of all (whose ratio is the headline's). */
export function roundsTable(floor: string, rounds: Rounds): string[] {
  const serveRate = median(rounds.map((r) => r.serve.requestsPerSecond));
  const floorRate = median(rounds.map((r) => r.noop.requestsPerSecond));
  const pairs = Math.max(...rounds.map((r) => r.pair));
  return [
    `| round | pair | serve req/s | ${floor} req/s | serve / no-op |`,
    '|---|---|---|---|---|',
    ...rounds.map((r, index) => `| ${Math.floor(index / pairs) + 1} | ${r.pair} | ${integer(r.serve.requestsPerSecond)} | ${integer(r.noop.requestsPerSecond)} | ${percent(share(r.serve, r.noop))} |`),
    `| median | | ${integer(serveRate)} | ${integer(floorRate)} | **${percent(serveRate / floorRate)}** |`,
  ];
}

/** The markdown of the serve-beside-no-op figures, for a dated section of bench/RESULTS.md. */
export function serveBenchReport(results: ServeBenchResults): string[] {
  const { settings, saturationRounds, tokenRounds, wrongKeyRounds, latency, openLoop, oneAtATime, denyMix, largeBody, workerRounds } = results;
  const serveRate = median(saturationRounds.map((r) => r.serve.requestsPerSecond));
  const noopRate = median(saturationRounds.map((r) => r.noop.requestsPerSecond));
  const ratio = serveRate / noopRate;
  const tokenServeRate = median(tokenRounds.map((r) => r.serve.requestsPerSecond));
  const tokenNoopRate = median(tokenRounds.map((r) => r.noop.requestsPerSecond));
  const tokenRatio = tokenServeRate / tokenNoopRate;
  const wrongKeyServeRate = median(wrongKeyRounds.map((r) => r.serve.requestsPerSecond));
  const wrongKeyNoopRate = median(wrongKeyRounds.map((r) => r.noop.requestsPerSecond));
  const wrongKeyRatio = wrongKeyServeRate / wrongKeyNoopRate;
  const mixRatio = median(denyMix.rounds.map((r) => r.serve.requestsPerSecond)) / median(denyMix.rounds.map((r) => r.noop.requestsPerSecond));
  const serveRuns = [
    ...saturationRounds.map((r) => r.serve),
    ...tokenRounds.map((r) => r.serve),
    ...wrongKeyRounds.map((r) => r.serve),
    latency.serve,
    oneAtATime.serve,
    ...denyMix.rounds.map((r) => r.serve),
    ...largeBody.rounds.map((r) => r.serve),
    ...workerRounds.flatMap((round) => [...round.byCount.values()]),
  ];
  const { statements, checks } = statementsPerCheck(serveRuns);
  const p99 = latency.serve.latency!.p99Micros;
  const workerCounts = [...(workerRounds[0]?.byCount.keys() ?? [])];
  const workerRuns = (count: string) => workerRounds.map((round) => round.byCount.get(count)!);
  const workersNoop = workerRounds.map((round) => round.noop);
  const workersImplemented = workerRuns('2').some((run) => run.processes > 1);
  const medianOf = (runs: readonly LoadRun[], pick: (run: LoadRun) => number) => median(runs.map(pick));
  const medianRun = (pick: 'serve' | 'noop', of: Rounds = saturationRounds): LoadRun => {
    const runs = of.map((r) => r[pick]);
    return {
      ...runs[0]!,
      requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
      cpuMicrosPerCheck: median(runs.map((r) => r.cpuMicrosPerCheck)),
      allocatedBytesPerCheck: median(runs.map((r) => r.allocatedBytesPerCheck)),
      gcMicrosPerCheck: median(runs.map((r) => r.gcMicrosPerCheck)),
    };
  };

  const latencyRow = (name: string, run: LoadRun) => {
    const l = run.latency!;
    return `| ${name} | ${millis(l.p50Micros)} | ${millis(l.p99Micros)} | ${millis(l.p999Micros)} | ${millis(l.maxMicros)} | ${integer(l.requests)} |`;
  };
  const latencyTable = (serve: LoadRun, noop: LoadRun) => [
    '| server | p50 ms | p99 ms | p99.9 ms | max ms | requests |',
    '|---|---|---|---|---|---|',
    latencyRow('serve', serve),
    latencyRow('no-op', noop),
  ];

  return [
    `**Headline: one \`serve\` process answers ${percent(ratio)} of the no-op's checks per second** ` +
      `(${integer(serveRate)} against ${integer(noopRate)} req/s, medians of ${saturationRounds.length} runs of ${settings.seconds} s: ${settings.rounds} alternating rounds of ${settings.instances} pairs of processes); ` +
      `**with a repeated Bearer token, ${percent(tokenRatio)}** (${integer(tokenServeRate)} against ${integer(tokenNoopRate)} req/s); ` +
      `**refusing a wrong key (102), ${percent(wrongKeyRatio)}** (${integer(wrongKeyServeRate)} against ${integer(wrongKeyNoopRate)} req/s).`,
    '',
    '| target | measured | met |',
    '|---|---|---|',
    `| one process at ${percent(TARGETS.minShareOfNoop)} or more of the no-op | ${percent(ratio)} | ${yes(ratio >= TARGETS.minShareOfNoop)} |`,
    `| a repeated Bearer token: one process at ${percent(TARGETS.minShareOfNoop)} or more of the no-op answering a token's allow | ${percent(tokenRatio)} | ${yes(tokenRatio >= TARGETS.minShareOfNoop)} |`,
    `| denials as cheap as allows: one process at ${percent(TARGETS.minShareOfNoop)} or more of the no-op answering a wrong key's 102 | ${percent(wrongKeyRatio)} | ${yes(wrongKeyRatio >= TARGETS.minShareOfNoop)} |`,
    `| not the target's measure: the deny-heavy mix, where the no-op answers every request with the allow (fewer bytes than serve's denials) | ${percent(mixRatio)} | |`,
    `| p99 under ${millis(TARGETS.maxP99Micros)} ms at half of saturation (${integer(latency.ratePerSecond)} req/s) | ${millis(p99)} ms (the no-op: ${millis(latency.noop.latency!.p99Micros)} ms) | ${yes(p99 < TARGETS.maxP99Micros)} |`,
    `| not the target's measure: p99 of one check at a time | ${millis(oneAtATime.serve.latency!.p99Micros)} ms (the no-op: ${millis(oneAtATime.noop.latency!.p99Micros)} ms) | |`,
    `| not a target: CPU per check, no-op / serve (moved less than throughput by the machine's other load) | ` +
      `${percent(medianRun('noop').cpuMicrosPerCheck / medianRun('serve').cpuMicrosPerCheck)} | |`,
    `| zero database statements per check | ${statements} statements in ${integer(checks)} checks (${(statements / checks).toFixed(6)} per check; listed below) | ` +
      `${yes(statements * TARGETS.checksPerPeriodicStatement < checks)} |`,
    '',
    `### Saturation: \`h2load -c4 -m32 -D ${settings.seconds}\`, the allowed request`,
    '',
    'Each server warmed up first; rounds alternate which server goes first, so a drift of the machine favours neither.',
    `${settings.instances} \`serve\` processes (\`BENCH_INSTANCES\`), each measured beside a no-op of its own in every round, and the medians`,
    'taken over all of them: identical processes of one program can run a fifth apart for their whole life on a shared machine,',
    `so one pair would measure which process was the faster as much as what \`serve\` costs. ${processSpread(saturationRounds)}`,
    results.cpuPlan === undefined
      ? 'h2load and the servers ran wherever the scheduler put them (`BENCH_PIN=0`, one CPU, or no `taskset`).'
      : `h2load ran on CPU ${results.cpuPlan.load} and every server, \`serve\` and its no-ops alike, on CPU ${results.cpuPlan.servers} (\`taskset\`, every thread), ` +
        'so that neither takes the other\'s cores and a ratio compares the CPU each server spends on a check; the workers rows below run on every CPU. `BENCH_PIN=0` shares them as the scheduler sees fit.',
    'While one server is measured, every other one is stopped (SIGSTOP, SIGCONT after): an idle `serve` still wakes about a hundred times a second and would take its turns, and the caches, from the one measured.',
    '',
    ...roundsTable('no-op', saturationRounds),
    '',
    `### A repeated token: \`h2load -c4 -m32 -D ${settings.seconds}\`, the allowed request with \`Authorization: Bearer <JWT>\``,
    '',
    'One RS256 access token of the partner\'s registered client (no credentials in the body), sent on every request: `serve`',
    'verified it once, at its first sighting before the load, and from then on finds it by its SHA-256. The floor is a',
    'second no-op (`noop-server.js <site> --token-client <client>`) answering the allowed CheckResponse `serve` sends to',
    'that token (its bytes compared below). A first-seen token\'s cost is the signature check: see `token-verify.js` in',
    'the pure-Node benchmarks of this run.',
    '',
    ...roundsTable('token no-op', tokenRounds),
    '',
    `### A wrong key: \`h2load -c4 -m32 -D ${settings.seconds}\`, the partner's site with a key it does not have`,
    '',
    'Every request is refused with 102 (`API key *****… is invalid`). The floor is a third no-op',
    '(`noop-server.js <site> --wrong-key <masked key>`) answering the same denied CheckResponse (its bytes compared below),',
    'as the other floors answer the bytes `serve` sends.',
    '',
    ...roundsTable('102 no-op', wrongKeyRounds),
    '',
    '### Cost per check, and the mixes',
    '',
    'CPU: user + system time of the server\'s processes (`/proc/<pid>/stat`) over the run, per check h2load',
    'completed. Heap: bytes allocated on the V8 heap per check (from V8\'s per-collection statistics, by',
    '`bench/heap-probe.ts` loaded into the server with `NODE_OPTIONS=--import`; buffers outside the V8 heap are',
    'not counted), and the time V8 spent collecting. Figures are "serve / no-op"; the allow-only row is the median',
    'of the saturation rounds.',
    '',
    '| load | serve req/s | no-op req/s | serve / no-op | CPU µs per check | heap bytes allocated per check | GC µs per check |',
    '|---|---|---|---|---|---|---|',
    costRow('allow-only (`-c4 -m32`)', medianRun('serve'), medianRun('noop')),
    costRow('a repeated token, allowed (`-c4 -m32`)', medianRun('serve', tokenRounds), medianRun('noop', tokenRounds)),
    costRow('a wrong key, 102 (`-c4 -m32`)', medianRun('serve', wrongKeyRounds), medianRun('noop', wrongKeyRounds)),
    costRow(`deny-heavy: ${denyMix.files.join(', ')}, one h2load each (\`-c1 -m16\`); the no-op answers each with the allow`, medianRun('serve', denyMix.rounds), medianRun('noop', denyMix.rounds)),
    costRow(`${LARGE_BODY_BYTES / 1024} KiB bodies, allowed (\`-c4 -m32\`)`, medianRun('serve', largeBody.rounds), medianRun('noop', largeBody.rounds)),
    '',
    `In the deny-heavy mix's first round \`serve\` counted, by verdict: ${[...denyMix.rounds[0]!.serve.counted!.byVerdict].map(([verdict, count]) => `${verdict}: ${integer(count)}`).join(', ')}.`,
    '',
    `### Latency at half of serve's saturation: ${integer(latency.ratePerSecond)} req/s (\`h2load -c4 -m32 --rps ${latency.ratePerSecond / 4}\`)`,
    '',
    'Each request\'s time from h2load\'s `--log-file` (sent to end of response); nearest-rank percentiles.',
    '',
    ...latencyTable(latency.serve, latency.noop),
    '',
    `Open loop (\`bench/open-loop.ts\`): ${integer(openLoop.ratePerSecond)} requests a second at fixed intervals over 4 connections, whatever the answers, each timed from when it was due, so that queueing in the server (or in the generator, a Node process on the same cores) shows instead of being hidden by a load that waits (coordinated omission):`,
    '',
    '| server | p50 ms | p99 ms | p99.9 ms | max ms | answered / sent |',
    '|---|---|---|---|---|---|',
    ...(['serve', 'noop'] as const).map((name) => {
      const run = openLoop[name];
      return `| ${name === 'noop' ? 'no-op' : name} | ${run.p50Ms.toFixed(2)} | ${run.p99Ms.toFixed(2)} | ${run.p999Ms.toFixed(2)} | ${run.maxMs.toFixed(2)} | ${integer(run.answered)} / ${integer(run.sent)} |`;
    }),
    '',
    'At a fixed rate h2load sends on a timer, several requests at a time, and shares the two cores with the',
    'server: the no-op\'s figures beside serve\'s show how much of these milliseconds is the load generator',
    'and the machine rather than the check. With one check at a time on one connection (`h2load -c1 -m1`,',
    'nothing queued in front of it), the round trip through h2load and the server:',
    '',
    ...latencyTable(oneAtATime.serve, oneAtATime.noop),
    '',
    '### Workers',
    '',
    `\`serve\` with \`WORKERS=1\` and \`WORKERS=2\`, both started for this, beside the no-op: saturation as above, on every CPU, ` +
      `${workerRounds.length} rounds, each server taking its turn first.` +
      (workersImplemented ? '' : ' **This `serve` does not implement `WORKERS` yet** (`WORKERS=2` ran one process), so both columns measure one process.'),
    '',
    `| round | ${workerCounts.map((count) => `serve WORKERS=${count} req/s`).join(' | ')} | no-op req/s |`,
    `|---|${workerCounts.map(() => '---|').join('')}---|`,
    ...workerRounds.map((round, index) =>
      `| ${index + 1} | ${workerCounts.map((count) => integer(round.byCount.get(count)!.requestsPerSecond)).join(' | ')} | ${integer(round.noop.requestsPerSecond)} |`),
    `| median | ${workerCounts.map((count) => `**${integer(medianOf(workerRuns(count), (r) => r.requestsPerSecond))}**`).join(' | ')} | ${integer(medianOf(workersNoop, (r) => r.requestsPerSecond))} |`,
    `| share of the no-op | ${workerCounts.map((count) => percent(medianOf(workerRuns(count), (r) => r.requestsPerSecond) / medianOf(workersNoop, (r) => r.requestsPerSecond))).join(' | ')} | 100 % |`,
    `| CPU µs per check (median) | ${workerCounts.map((count) => micros(medianOf(workerRuns(count), (r) => r.cpuMicrosPerCheck))).join(' | ')} | ${micros(medianOf(workersNoop, (r) => r.cpuMicrosPerCheck))} |`,
    `| processes | ${workerCounts.map((count) => String(Math.max(...workerRuns(count).map((r) => r.processes)))).join(' | ')} | 1 |`,
    '',
    `### Database statements during the serve runs (${results.statementSource})`,
    '',
    `Every statement \`serve\` issued on its database across all its measured runs (${integer(checks)} checks, ` +
      `${serveRuns.reduce((total, run) => total + run.seconds, 0)} s of load):`,
    '',
    ...statementTable(serveRuns),
    '',
    '### How the figures are checked',
    '',
    ...results.verification.map((line) => `- ${line}.`),
    '- After every run: h2load saw an HTTP 200 for every request it completed, and `serve`\'s `/metrics`',
    '  (`sitekey_authz_checks_total` by verdict) counted exactly the verdict each request file was written for, as many',
    '  times as h2load was answered (plus at most the streams still in flight when h2load stopped), none undecided.',
    '',
    '### Setup and commands',
    '',
    `- \`serve\`: \`node dist/src/cli/main.js serve\`, \`LOG_LEVEL=info\` to a file, token-based authentication on (\`TOKEN_ISSUER\`, ` +
      `\`TOKEN_AUDIENCE\`, \`TOKEN_JWKS_URL\` of a JWKS on loopback, \`bench/bench-issuer.ts\`), defaults otherwise, on ${results.databaseDescription}; ` +
      `${integer(results.sites)} sites (2 keys and 3 CIDRs each; the partner's allowlist holds 127.0.0.1, one other site is in a brownout for 105).`,
    '- no-op: `node dist/bench/noop-server.js`: grpc-js with `grpcServerOptions(GRPC_LIMITS, …)`, our proto/, our TCP',
    '  listener, answering the allowed CheckResponse `serve` sends (its bytes compared above), encoded once as `serve`',
    '  keeps its answers encoded: the floor does no per-check work that `serve` does not.',
    '- Requests: CheckRequests as Envoy sends them (headers, `raw_body`, source 127.0.0.1), encoded with Envoy\'s',
    '  upstream protos, with the 5-byte gRPC prefix, in one file each (`$BENCH_DIR` is a temporary directory).',
    '',
    '```sh',
    ...results.commands,
    '```',
  ];
}
