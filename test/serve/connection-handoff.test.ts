import assert from 'node:assert/strict';
import type { Worker } from 'node:cluster';
import type { Socket } from 'node:net';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { createLogger } from '../../src/observe/logger.js';
import type { HandoffOutcome } from '../../src/observe/worker-pool-metrics.js';
import { ConnectionHandoff, type HandoffMessage } from '../../src/serve/connection-handoff.js';

/** A worker as the handoff sees it: its id, and what it was sent. */
function fakeWorker(id: number) {
  const sent: { id: number; socket: Socket }[] = [];
  const worker = {
    id,
    send(message: HandoffMessage, socket: Socket) {
      sent.push({ id: message.id, socket });
      return true;
    },
  };
  return { worker: worker as unknown as Worker, sent };
}

function fakeSocket(name: string) {
  const socket = { name, destroyed: false, destroy: () => (socket.destroyed = true) };
  return socket as unknown as Socket & { name: string; destroyed: boolean };
}

function handoff(maxNotTaken = 100) {
  const counted = new Map<HandoffOutcome, number>();
  const warnings: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      warnings.push(chunk.toString());
      done();
    },
  });
  const clock = { now: 0 };
  const subject = new ConnectionHandoff(
    { maxNotTaken, receiptTimeoutMs: 2_000 },
    createLogger('warn', sink),
    (outcome, connections = 1) => counted.set(outcome, (counted.get(outcome) ?? 0) + connections),
    () => clock.now,
  );
  after(() => subject.close());
  return { subject, counted, warnings, clock };
}

const names = (sent: readonly { socket: Socket }[]) => sent.map(({ socket }) => (socket as Socket & { name: string }).name);

describe('the primary hands each gRPC connection to a worker that can decide', () => {
  it('closes a connection at once while no worker can decide, and counts it', () => {
    const { subject, counted } = handoff();
    const socket = fakeSocket('early');
    subject.hand(socket);
    assert.equal(socket.destroyed, true);
    assert.deepEqual([...counted], [['closed_no_worker', 1]]);
  });

  it('hands connections in turn, and lets go of its copy only on the receipt of the worker it handed it to', () => {
    const { subject, counted } = handoff();
    const a = fakeWorker(1);
    const b = fakeWorker(2);
    subject.add(a.worker);
    subject.add(b.worker);
    for (const name of ['c1', 'c2']) subject.hand(fakeSocket(name));
    assert.deepEqual([names(a.sent), names(b.sent)], [['c1'], ['c2']]);
    const [toA] = a.sent;
    subject.received(b.worker, toA!.id);
    assert.equal((toA!.socket as Socket & { destroyed: boolean }).destroyed, false, 'a receipt from another worker counts for nothing');
    assert.equal(subject.untakenBy(a.worker), 1);
    subject.received(a.worker, toA!.id);
    assert.equal((toA!.socket as Socket & { destroyed: boolean }).destroyed, true);
    assert.equal(subject.untakenBy(a.worker), 0);
    assert.deepEqual([...counted], [['taken', 1]]);
  });

  it('passes over a worker that has not taken what it was handed while another has taken everything', () => {
    const { subject } = handoff();
    const stuck = fakeWorker(1);
    const taking = fakeWorker(2);
    subject.add(stuck.worker);
    subject.add(taking.worker);
    subject.hand(fakeSocket('c1'));
    for (const name of ['c2', 'c3', 'c4']) {
      subject.hand(fakeSocket(name));
      subject.received(taking.worker, taking.sent.at(-1)!.id);
    }
    assert.deepEqual([names(stuck.sent), names(taking.sent)], [['c1'], ['c2', 'c3', 'c4']]);
    // When every worker has something untaken, turns resume.
    subject.hand(fakeSocket('c5'));
    subject.hand(fakeSocket('c6'));
    assert.equal(stuck.sent.length + taking.sent.length, 6);
  });

  it('hands what a worker had not taken when it exited to another, counts and logs it, and hands it nothing more', () => {
    const { subject, counted, warnings } = handoff();
    const dying = fakeWorker(1);
    const living = fakeWorker(2);
    subject.add(dying.worker);
    subject.add(living.worker);
    for (const name of ['c1', 'c2', 'c3']) subject.hand(fakeSocket(name));
    assert.deepEqual(names(dying.sent), ['c1', 'c3']);
    subject.received(living.worker, living.sent[0]!.id);
    subject.exited(dying.worker);
    assert.deepEqual(names(living.sent), ['c2', 'c1', 'c3']);
    assert.ok(dying.sent.every(({ socket }) => !(socket as Socket & { destroyed: boolean }).destroyed), 'handed on untouched, not closed');
    assert.equal(counted.get('handed_again'), 2);
    assert.match(warnings.join(''), /"worker":1,"connections":2,"handedAgain":2,"msg":"a worker exited before taking the connections handed to it/);
    subject.hand(fakeSocket('c4'));
    assert.deepEqual(names(dying.sent), ['c1', 'c3']);
    assert.equal(subject.untakenBy(dying.worker), 0);
  });

  it('closes what the last worker had not taken when it exited', () => {
    const { subject, counted } = handoff();
    const only = fakeWorker(1);
    subject.add(only.worker);
    const socket = fakeSocket('c1');
    subject.hand(socket);
    subject.exited(only.worker);
    assert.equal(socket.destroyed, true);
    assert.deepEqual([...counted], [['closed_no_worker', 1]]);
  });

  it('closes a newcomer at once beyond maxNotTaken connections not yet taken, with a warning', () => {
    const { subject, counted, warnings } = handoff(2);
    const frozen = fakeWorker(1);
    subject.add(frozen.worker);
    const sockets = ['c1', 'c2', 'c3'].map(fakeSocket);
    for (const socket of sockets) subject.hand(socket);
    assert.deepEqual(names(frozen.sent), ['c1', 'c2']);
    assert.deepEqual(sockets.map((socket) => socket.destroyed), [false, false, true]);
    assert.deepEqual([...counted], [['closed_too_many_waiting', 1]]);
    assert.match(warnings.join(''), /"connections":1,"last":"closed_too_many_waiting".*"waiting":2,"maxNotTaken":2/);
  });

  it('lets go of a connection its worker has not taken within receiptTimeoutMs, and no longer counts that worker as busy', () => {
    const { subject, counted, clock } = handoff();
    const deaf = fakeWorker(1);
    subject.add(deaf.worker);
    const late = fakeSocket('late');
    subject.hand(late);
    clock.now = 1_000;
    const later = fakeSocket('later');
    subject.hand(later);
    clock.now = 2_000;
    subject.letGoOfOverdue();
    assert.deepEqual([late.destroyed, later.destroyed], [true, false]);
    assert.equal(subject.untakenBy(deaf.worker), 1);
    clock.now = 3_000;
    subject.letGoOfOverdue();
    assert.equal(later.destroyed, true);
    assert.equal(subject.untakenBy(deaf.worker), 0);
    assert.deepEqual([...counted], [['closed_not_taken', 2]]);
    // A receipt that comes after all finds nothing to let go of.
    subject.received(deaf.worker, deaf.sent[0]!.id);
    assert.equal(counted.get('taken'), undefined);
  });

  it('closes, when asked, every connection no worker has taken yet', () => {
    const { subject } = handoff();
    const worker = fakeWorker(1);
    subject.add(worker.worker);
    const sockets = ['c1', 'c2'].map(fakeSocket);
    for (const socket of sockets) subject.hand(socket);
    subject.received(worker.worker, worker.sent[0]!.id);
    subject.close();
    assert.deepEqual(sockets.map((socket) => socket.destroyed), [true, true]);
    assert.equal(subject.untakenBy(worker.worker), 0);
  });
});
