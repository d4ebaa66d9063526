import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { ConnectionRoster, connectionSource, type RosterConnection } from '../../src/common/connection-roster.js';

/** A connection whose rank the test sets: undefined while busy or within its grace. */
class FakeConnection extends EventEmitter implements RosterConnection {
  destroyed = false;
  constructor(
    readonly name: string,
    public rank: number | undefined = undefined,
    public newcomer = true,
  ) {
    super();
  }
  evictionRank(): number | undefined {
    return this.rank;
  }
  isNewcomer(): boolean {
    return this.newcomer;
  }
  destroy(): void {
    this.destroyed = true;
  }
}

const LIMITS = { maxConnections: 4, maxConnectionsWithNewcomers: 6, maxConnectionsPerSource: 3 };

describe('ConnectionRoster: whom a newcomer replaces', () => {
  it('at a source cap, replaces that source\'s own most replaceable connection, else its oldest newcomer', () => {
    const roster = new ConnectionRoster<FakeConnection>(LIMITS);
    const [a1, a2, a3] = ['a1', 'a2', 'a3'].map((name) => roster.admit('a', () => new FakeConnection(name))!);
    const b1 = roster.admit('b', () => new FakeConnection('b1', 0))!;
    a2!.rank = 1;
    const a4 = roster.admit('a', () => new FakeConnection('a4'));
    assert.ok(a4 !== undefined && a2!.destroyed && !b1.destroyed, 'its own idle connection, not the other source\'s slow one');
    const a5 = roster.admit('a', () => new FakeConnection('a5'));
    assert.ok(a5 !== undefined && a1!.destroyed && !a3!.destroyed, 'its oldest newcomer, within grace or not');
    assert.equal(roster.size, 4);
  });

  it('at a source cap of busy connections, refuses the source\'s newcomer', () => {
    const roster = new ConnectionRoster<FakeConnection>(LIMITS);
    for (const name of ['a1', 'a2', 'a3']) roster.admit('a', () => new FakeConnection(name, undefined, false));
    assert.equal(roster.admit('a', () => new FakeConnection('a4')), undefined);
    assert.ok(roster.admit('b', () => new FakeConnection('b1')) !== undefined, 'another source still gets in');
  });

  it('at the cap, replaces the lowest rank of any source; with none, lets newcomers in up to the higher cap', () => {
    const roster = new ConnectionRoster<FakeConnection>(LIMITS);
    const sources = ['a', 'b', 'c', 'd', 'e', 'f'];
    const held = sources.slice(0, 4).map((source) => roster.admit(source, () => new FakeConnection(source))!);
    held[2]!.rank = 2;
    held[1]!.rank = 0;
    assert.ok(roster.admit('e', () => new FakeConnection('e')) !== undefined && held[1]!.destroyed && !held[2]!.destroyed);
    held[2]!.rank = undefined;
    assert.ok(roster.admit('f', () => new FakeConnection('f')) !== undefined);
    assert.ok(roster.admit('g', () => new FakeConnection('g')) !== undefined);
    assert.equal(roster.size, 6);
    assert.equal(roster.admit('h', () => new FakeConnection('h')), undefined, 'beyond maxConnectionsWithNewcomers');
  });

  it('forgets a connection when it closes', () => {
    const roster = new ConnectionRoster<FakeConnection>(LIMITS);
    const a1 = roster.admit('a', () => new FakeConnection('a1'))!;
    a1.emit('close');
    assert.equal(roster.size, 0);
  });
});

describe('connectionSource: whom a connection counts against', () => {
  const cases: Array<[string | undefined, string]> = [
    ['192.0.2.7', '192.0.2.7'],
    ['::ffff:192.0.2.7', '192.0.2.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    [undefined, ''],
  ];
  for (const [address, source] of cases) {
    it(`${String(address)} counts as ${JSON.stringify(source)}`, () => assert.equal(connectionSource(address), source));
  }
});
