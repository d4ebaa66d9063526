import type { KeyCredential, KeyHash, KeysByHash } from '../decision/types.js';

/** Up to this many keys, a site's keys are a list searched in order; beyond it, a Map. */
const LIST_MAX = 8;

/** A key as the list holds it: its credential and the hash it is found by. */
interface ListedKey extends KeyCredential {
  readonly hash: KeyHash;
}

/**
 * A few keys in an array exactly as long as they are. A site has one or two keys as a rule, and a
 * snapshot holds every site: with a Map each, 100,000 sites of two keys took 7 MiB more heap, for every
 * full collection to mark and for the pod to hold (`bench/snapshot-load.js`).
 */
class KeyList implements KeysByHash {
  constructor(private readonly listed: readonly ListedKey[]) {}

  get size(): number {
    return this.listed.length;
  }

  get(hash: KeyHash): KeyCredential | undefined {
    for (const key of this.listed) if (key.hash === hash) return key;
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
export function siteKeys(keys: ReadonlyArray<readonly [KeyHash, KeyCredential]>): KeysByHash {
  if (keys.length === 0) return NO_KEYS;
  if (keys.length > LIST_MAX) return new Map(keys);
  return new KeyList(keys.map(([hash, { keyId, expiresAt }]) => ({ hash, keyId, expiresAt })).reverse());
}
