import { parseClientIp } from '../allowlist/client-ip.js';
import { addressBucket } from './token-buckets.js';

/**
 * One connection of an HTTP port, as the roster chooses among them. The order both ports use, lower
 * first: 0, a request coming slower than a person's or a probe's (bytes, but no complete request);
 * 1, idle between requests; 2, a newcomer that has sent nothing for its grace. Undefined: not
 * replaceable (a request is being answered, or a newcomer's request may still be on its way).
 */
export interface RosterConnection {
  evictionRank(now: number): number | undefined;
  /** No complete request yet and none being answered: what a stranger's silent or slow connection is. */
  isNewcomer(): boolean;
  destroy(): void;
  once(event: 'close', listener: () => void): unknown;
}

export interface RosterLimits {
  /** Connections at once; at the cap a newcomer takes the place of the most replaceable one. */
  readonly maxConnections: number;
  /** Connections at once while newcomers within their grace fill the places above `maxConnections`; beyond, a newcomer is closed at once. */
  readonly maxConnectionsWithNewcomers: number;
  /**
   * Connections at once from one source (an IPv4 address, an IPv6 /64): at this cap a newcomer takes
   * the place of that source's own most replaceable connection, else of its oldest newcomer, so one
   * source's flood only ever replaces its own connections and never fills the port.
   */
  readonly maxConnectionsPerSource: number;
}

/** Whom a connection counts against: its IPv4 address (mapped ones too), or its IPv6 /64. */
export function connectionSource(remoteAddress: string | undefined): string {
  const ip = parseClientIp(remoteAddress);
  if (ip === undefined) return remoteAddress ?? '';
  return addressBucket(ip.address);
}

function lowestRank<C extends RosterConnection>(connections: Iterable<C>, now: number): C | undefined {
  let chosen: C | undefined;
  let chosenRank = Number.POSITIVE_INFINITY;
  for (const connection of connections) {
    const rank = connection.evictionRank(now);
    if (rank !== undefined && rank < chosenRank) {
      chosen = connection;
      chosenRank = rank;
      if (rank === 0) break;
    }
  }
  return chosen;
}

/**
 * The open connections of one port, oldest first, counted per source: the cap, and whom a newcomer
 * replaces. A probe or a person sends a request at once and keeps its place; strangers' silent or
 * slow connections make room, and a flood from one source makes room only among its own.
 */
export class ConnectionRoster<C extends RosterConnection> implements Iterable<C> {
  /** Each open connection with its source, in the order they came. */
  private readonly open = new Map<C, string>();
  private readonly bySource = new Map<string, Set<C>>();

  constructor(private readonly limits: RosterLimits) {}

  get size(): number {
    return this.open.size;
  }

  [Symbol.iterator](): Iterator<C> {
    return this.open.keys();
  }

  /** The newcomer `create()` makes from `source`, or undefined when no place may be made for it (then it is never created). */
  admit(source: string, create: () => C, now = performance.now()): C | undefined {
    const same = this.bySource.get(source);
    if (same !== undefined && same.size >= this.limits.maxConnectionsPerSource) {
      const replaced = lowestRank(same, now) ?? [...same].find((connection) => connection.isNewcomer());
      if (replaced === undefined) return undefined;
      this.remove(replaced);
    } else if (this.open.size >= this.limits.maxConnections) {
      const replaced = lowestRank(this.open.keys(), now);
      if (replaced !== undefined) this.remove(replaced);
      else if (this.open.size >= this.limits.maxConnectionsWithNewcomers) return undefined;
    }
    const connection = create();
    this.open.set(connection, source);
    const sources = this.bySource.get(source) ?? new Set<C>();
    sources.add(connection);
    this.bySource.set(source, sources);
    connection.once('close', () => this.forget(connection));
    return connection;
  }

  closeAll(): void {
    for (const connection of [...this.open.keys()]) this.remove(connection);
  }

  private remove(connection: C): void {
    this.forget(connection);
    connection.destroy();
  }

  private forget(connection: C): void {
    const source = this.open.get(connection);
    if (source === undefined) return;
    this.open.delete(connection);
    const sources = this.bySource.get(source);
    sources?.delete(connection);
    if (sources?.size === 0) this.bySource.delete(source);
  }
}
