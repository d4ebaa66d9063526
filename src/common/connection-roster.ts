import { parseClientIp } from '../allowlist/client-ip.js';
import { addressBucket } from './token-buckets.js';

/** evictionRank, lowest replaced first: 0 slow request, 1 idle, 2 silent newcomer; undefined: never replaced. */
export interface RosterConnection {
  evictionRank(now: number): number | undefined;
  isNewcomer(): boolean;
  destroy(): void;
  once(event: 'close', listener: () => void): unknown;
}

export interface RosterLimits {
  readonly maxConnections: number;
  /** While newcomers within their grace fill places above `maxConnections`; beyond, a newcomer is closed at once. */
  readonly maxConnectionsWithNewcomers: number;
  /** From one source (an IPv4 address, an IPv6 /64): its flood only ever replaces its own connections. */
  readonly maxConnectionsPerSource: number;
}

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

/** A port's open connections, oldest first, per source: a probe or a person keeps its place, strangers' make room. */
export class ConnectionRoster<C extends RosterConnection> implements Iterable<C> {
  private readonly open = new Map<C, string>();
  private readonly bySource = new Map<string, Set<C>>();

  constructor(private readonly limits: RosterLimits) {}

  get size(): number {
    return this.open.size;
  }

  [Symbol.iterator](): Iterator<C> {
    return this.open.keys();
  }

  /** Undefined when no place may be made (then `create` is never called). */
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
