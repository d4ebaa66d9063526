import { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import { ConnectionRoster, connectionSource, type RosterConnection, type RosterLimits } from '../common/connection-roster.js';

/** The part of HTTP_ENDPOINT_LIMITS a connection is held to. */
interface ConnectionLimits extends RosterLimits {
  readonly headersTimeoutMs: number;
  readonly newConnectionGraceMs: number;
  readonly maxPipelinedRequests: number;
  readonly maxHeaderBytes: number;
}

/** Node's own answer when a request's headers come too late. */
const REQUEST_TIMEOUT = Buffer.from('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n', 'ascii');

/** Just past the first empty line in `bytes` at or after `from`, or -1; llhttp also takes a bare LF as a line end. */
function headerBlockEnd(bytes: Buffer, from = 0): number {
  for (let lf = bytes.indexOf(10, from); lf !== -1 && lf + 1 < bytes.length; lf = bytes.indexOf(10, lf + 1)) {
    if (bytes[lf + 1] === 10) return lf + 2;
    if (bytes[lf + 1] === 13 && lf + 2 < bytes.length && bytes[lf + 2] === 10) return lf + 3;
  }
  return -1;
}

/**
 * A connection as a Duplex that gives node:http one request at a time: its parser would otherwise parse every
 * pipelined request at once, and thousands of them would hold up every other connection.
 */
export class GatedConnection extends Duplex implements RosterConnection {
  readonly openedAt = performance.now();
  /** Bytes not yet parsed, `heldFrom` to `heldTo`; doubling when full, a byte a time costs few copies. */
  private storage: Buffer = Buffer.alloc(0);
  private heldFrom = 0;
  private heldTo = 0;
  /** Complete requests in `held`, counted up to `countedTo`. */
  private waiting = 0;
  private countedTo = 0;
  private inFlight = false;
  private answered = 0;
  /** At the connection, or at its first byte after an answer; undefined while idle or answering. */
  private requestStartedAt: number | undefined = this.openedAt;
  private socketEnded = false;
  private endPushed = false;

  constructor(
    readonly socket: Socket,
    private readonly limits: ConnectionLimits,
  ) {
    super({ allowHalfOpen: true });
    socket.on('data', (chunk: Buffer) => this.received(chunk));
    socket.on('end', () => {
      this.socketEnded = true;
      this.pump();
    });
    socket.on('timeout', () => this.emit('timeout'));
    socket.on('error', () => this.destroy());
    socket.on('close', () => this.destroy());
  }

  /** Once the request in flight has been answered (or abandoned). */
  requestDone(): void {
    if (!this.inFlight) return;
    this.inFlight = false;
    this.answered += 1;
    this.requestStartedAt = this.held.length > 0 ? performance.now() : undefined;
    this.pump();
  }

  /** As connection-roster.ts: 0, slower than a probe; 1, idle; 2, silent past the grace; never a full request. */
  evictionRank(now: number): number | undefined {
    if (this.inFlight || this.waiting > 0) return undefined;
    if (this.held.length > 0 || (this.requestStartedAt !== undefined && this.answered > 0)) return 0;
    if (this.answered > 0) return 1;
    return now - this.openedAt >= this.limits.newConnectionGraceMs ? 2 : undefined;
  }

  isNewcomer(): boolean {
    return this.answered === 0 && !this.inFlight && this.waiting === 0;
  }

  isLate(now: number): boolean {
    return !this.inFlight && this.waiting === 0 && this.requestStartedAt !== undefined && now - this.requestStartedAt > this.limits.headersTimeoutMs;
  }

  /** 408 to a client that sent part of a request; one that sent nothing is just closed. */
  timeOut(): void {
    this.requestStartedAt = undefined;
    if (this.held.length > 0) this.socket.end(REQUEST_TIMEOUT);
    this.socket.destroySoon();
  }

  /** node:http sets its keep-alive and no-progress time-outs through this, as on a socket. */
  setTimeout(ms: number): this {
    this.socket.setTimeout(ms);
    return this;
  }

  destroySoon(): void {
    this.socket.destroySoon();
  }

  private get held(): Buffer {
    return this.storage.subarray(this.heldFrom, this.heldTo);
  }

  private hold(chunk: Buffer): void {
    if (this.heldFrom === this.heldTo) this.heldFrom = this.heldTo = 0;
    if (this.heldTo + chunk.length > this.storage.length) {
      const kept = this.held;
      this.storage = Buffer.allocUnsafe(Math.max(2 * (kept.length + chunk.length), 1024));
      kept.copy(this.storage);
      this.heldFrom = 0;
      this.heldTo = kept.length;
    }
    chunk.copy(this.storage, this.heldTo);
    this.heldTo += chunk.length;
  }

  private received(chunk: Buffer): void {
    if (this.destroyed) return;
    this.hold(chunk);
    if (!this.inFlight && this.requestStartedAt === undefined) this.requestStartedAt = performance.now();
    // From two bytes before the new ones (an empty line may straddle them), never into a block already counted.
    for (let end = headerBlockEnd(this.held, this.countedTo); end !== -1; end = headerBlockEnd(this.held, end)) {
      this.countedTo = end;
      this.waiting += 1;
      if (this.waiting + (this.inFlight ? 1 : 0) > this.limits.maxPipelinedRequests) {
        this.socket.destroy();
        this.destroy();
        return;
      }
    }
    this.countedTo = Math.max(this.countedTo, this.held.length - 2);
    // What one connection may hold unparsed: its pipelined requests at their largest; beyond, TCP waits.
    if (this.held.length > this.limits.maxHeaderBytes * (this.limits.maxPipelinedRequests + 1)) this.socket.pause();
    this.pump();
  }

  /** Gives the parser the next request; or what is held, when it can never become a request. */
  private pump(): void {
    if (this.inFlight || this.destroyed) return;
    // Only a counted request has an end to find: a request still arriving is not scanned again per chunk.
    const end = this.waiting > 0 ? headerBlockEnd(this.held) : -1;
    if (end !== -1) {
      this.inFlight = true;
      this.waiting -= 1;
      this.requestStartedAt = undefined;
      this.feed(end);
      return;
    }
    // Headers too large for the parser (it answers 431), or all there will be (it answers 400 if incomplete).
    if (this.held.length > this.limits.maxHeaderBytes || this.socketEnded) this.feed(this.held.length);
    if (this.socketEnded && this.held.length === 0 && !this.endPushed) {
      this.endPushed = true;
      this.push(null);
    }
  }

  private feed(bytes: number): void {
    // A copy: the storage behind it is written again by later chunks.
    const request = Buffer.from(this.held.subarray(0, bytes));
    this.heldFrom += bytes;
    this.countedTo = Math.max(0, this.countedTo - bytes);
    if (this.socket.isPaused() && this.held.length <= this.limits.maxHeaderBytes * (this.limits.maxPipelinedRequests + 1)) this.socket.resume();
    if (request.length > 0) this.push(request);
  }

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.socket.write(chunk, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.socket.end(callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.socket.destroy();
    callback(error);
  }
}

/** The roster's caps, and the headers time-out (node:http's own applies only to sockets it accepted itself). */
export class OperatorConnections {
  private readonly roster: ConnectionRoster<GatedConnection>;
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly limits: ConnectionLimits,
    checkingIntervalMs: number,
  ) {
    this.roster = new ConnectionRoster(limits);
    this.sweep = setInterval(() => this.timeOutLate(), checkingIntervalMs).unref();
  }

  /** A new connection, or undefined when it is closed at once (see ConnectionRoster). */
  admit(socket: Socket): GatedConnection | undefined {
    const connection = this.roster.admit(connectionSource(socket.remoteAddress), () => new GatedConnection(socket, this.limits));
    if (connection === undefined) socket.destroy();
    return connection;
  }

  closeAll(): void {
    clearInterval(this.sweep);
    this.roster.closeAll();
  }

  private timeOutLate(): void {
    const now = performance.now();
    for (const connection of this.roster) if (connection.isLate(now)) connection.timeOut();
  }
}
