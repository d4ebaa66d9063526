import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ConnectionRoster, connectionSource, type RosterConnection, type RosterLimits } from '../common/connection-roster.js';

/** node:http reads the socket itself: the byte count and the request events tell what the client sent. */
class AdminConnection implements RosterConnection {
  private readonly openedAt = performance.now();
  private answering = 0;
  private answered = 0;
  private readAtAnswer = 0;

  constructor(
    private readonly socket: Socket,
    private readonly graceMs: number,
  ) {}

  requestStarted(response: ServerResponse): void {
    this.answering += 1;
    response.once('close', () => {
      this.answering -= 1;
      this.answered += 1;
      this.readAtAnswer = this.socket.bytesRead;
    });
  }

  /** The roster's order: 0, a request coming slower than a browser sends one; 1, idle between requests; 2, silent past its grace. */
  evictionRank(now: number): number | undefined {
    if (this.answering > 0) return undefined;
    const pastGrace = now - this.openedAt >= this.graceMs;
    if (this.socket.bytesRead > this.readAtAnswer) return pastGrace ? 0 : undefined;
    if (this.answered > 0) return 1;
    return pastGrace ? 2 : undefined;
  }

  isNewcomer(): boolean {
    return this.answered === 0 && this.answering === 0;
  }

  destroy(): void {
    this.socket.destroy();
  }

  once(event: 'close', listener: () => void): unknown {
    return this.socket.once(event, listener);
  }
}

/** The operator port's roster (connection-roster.ts); Node's headers time-out still cuts slow requests. */
export function holdAdminConnections(server: Server, limits: RosterLimits & { readonly newConnectionGraceMs: number }) {
  const roster = new ConnectionRoster<AdminConnection>(limits);
  const bySocket = new WeakMap<Socket, AdminConnection>();
  // Runs after node:http's own listener has taken the socket; a socket refused here is closed before it is read.
  server.on('connection', (socket: Socket) => {
    const connection = roster.admit(connectionSource(socket.remoteAddress), () => new AdminConnection(socket, limits.newConnectionGraceMs));
    if (connection === undefined) socket.destroy();
    else bySocket.set(socket, connection);
  });
  server.on('request', (request, response: ServerResponse) => bySocket.get(request.socket)?.requestStarted(response));
}
