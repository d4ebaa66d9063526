import type { KeyCredential, KeyHash, KeysByHash } from '../decision/types.js';

/** Up to this many keys, a site's keys are a list searched in order; beyond it, a Map. */
const LIST_MAX = 8;

/** A key's credential and the hash it is found by: what the snapshot holds of each key. */
export interface HashedKey extends KeyCredential {
  readonly hash: KeyHash;
}

/**
 * A few keys in an array exactly as long as they are. A site has one or two keys as a rule, and a
 * snapshot holds every site: with a Map each, 100,000 sites of two keys took 7 MiB more heap, for every
 * full collection to mark and for the pod to hold (`bench/snapshot-load.js`).
 */
class KeyList implements KeysByHash {
  constructor(private readonly listed: readonly HashedKey[]) {}

  get size(): number {
    return this.listed.length;
  }

  /** Searched from the end: of two keys with one hash, the last one given is found, as a Map keeps the last one set. */
  get(hash: KeyHash): KeyCredential | undefined {
    for (let index = this.listed.length - 1; index >= 0; index--) {
      const key = this.listed[index]!;
      if (key.hash === hash) return key;
    }
    return undefined;
  }

  *keys(): IterableIterator<KeyHash> {
    for (const key of this.listed) yield key.hash;
  }
}

const NO_KEYS = new KeyList([]);

/**
 * A site's keys, by hash, in the smallest form that finds one in a few steps: a list, or a Map when
 * rows written by hand give a site more keys than a list should search. Of two keys with one hash
 * (the schema makes hashes unique), the last is the one found, as in a Map.
 */
export function siteKeys(keys: readonly HashedKey[]): KeysByHash {
  if (keys.length === 0) return NO_KEYS;
  if (keys.length > LIST_MAX) return new Map(keys.map((key) => [key.hash, key]));
  // A copy: an array grown by push keeps room for more.
  return new KeyList(keys.slice());
}
