import { startCheckLoad, type CallRecord } from './check-load.js';
import { authorizationClient, type CheckArguments } from './envoy-client.js';

/**
 * The child process of startCheckLoadInChild: `node check-caller.js <target> <CheckArguments JSON>
 * <concurrency>` sends checks until its standard input ends, writing each answered call as a JSON line
 * with its times on the wall clock's scale (performance.timeOrigin + performance.now()).
 */
const [target = '', argsJson = '{}', concurrency = '1'] = process.argv.slice(2);
const client = authorizationClient(target);
const onCall = (call: CallRecord) =>
  process.stdout.write(`${JSON.stringify({ ...call, startedMs: performance.timeOrigin + call.startedMs, endedMs: performance.timeOrigin + call.endedMs })}\n`);
const load = startCheckLoad(client, JSON.parse(argsJson) as CheckArguments, Number(concurrency), onCall);
process.stdin.resume();
process.stdin.on('end', () => {
  void load.stop().then(() => client.close());
});
