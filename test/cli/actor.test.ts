import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { actorFor, runningAccount, type RunningAccount } from '../../src/cli/actor.js';
import { UsageError } from '../../src/cli/arguments.js';

const person: RunningAccount = { user: 'alice', uid: 1000, inKubernetesPod: false };
const root: RunningAccount = { user: 'root', uid: 0, inKubernetesPod: false };
const pod: RunningAccount = { user: 'node', uid: 1000, inKubernetesPod: true };

describe('actorFor', () => {
  const cases: Array<[string, string | undefined, RunningAccount, boolean, string | RegExp]> = [
    ['a person making a change: the OS user', undefined, person, true, 'alice'],
    ['a name given wins over the OS user', 'bob@example.com', person, true, 'bob@example.com'],
    ['root making a change without a name: refused', undefined, root, true, /runs as root.*name yourself for the audit log: --actor alice@example.com, or set SITEKEY_ACTOR=alice@example.com/],
    ['root with a name', 'bob@example.com', root, true, 'bob@example.com'],
    ['root reading: no name needed', undefined, root, false, 'root'],
    ["a pod's account making a change without a name: refused", undefined, pod, true, /Kubernetes pod as its user node.*--actor alice@example.com/],
    ['a pod reading', undefined, pod, false, 'node'],
    ['root naming itself root: refused, it names nobody', 'root', root, true, /"root" is that account, which names nobody: name yourself/],
    ["a pod naming its own account: refused", 'Node', pod, true, /"Node" is that account/],
    ['a person may name themselves as their OS user', 'alice', person, true, 'alice'],
  ];
  for (const [name, named, account, changes, expected] of cases) {
    it(name, () => {
      if (typeof expected === 'string') assert.equal(actorFor(named, account, changes), expected);
      else assert.throws(() => actorFor(named, account, changes), (error: unknown) => error instanceof UsageError && expected.test(error.message));
    });
  }
});

describe('runningAccount', () => {
  it('is in a pod when KUBERNETES_SERVICE_HOST is set or a service-account token is mounted', () => {
    assert.equal(runningAccount(false, () => false).inKubernetesPod, false);
    assert.equal(runningAccount(true, () => false).inKubernetesPod, true);
    assert.equal(runningAccount(false, () => true).inKubernetesPod, true);
  });
});
